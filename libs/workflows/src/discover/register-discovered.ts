import type { DataSource } from 'typeorm';
import { writeAudit } from '@abacus/access';
import { exprContext, expressionRecord, refTargets } from '@abacus/catalog';
import { FeatureEntity, SampleSetEntity, type ExperimentEntity } from '@abacus/data';
import { checkExpr, parseExprJson, type ExprKind } from '@abacus/samples';

export interface DiscoveredCandidate {
  name: string;
  text: string;
  kind: ExprKind;
  expression: Record<string, unknown>;
}

/**
 * Registers the adopted expressions of a discover as candidate features of its line (owned by the
 * experiment's owner, described by where they come from); a name already registered is left as it
 * is. Returns the names registered now. The comparison then records each one's provenance.
 */
export async function registerDiscovered(
  ds: DataSource,
  experiment: ExperimentEntity,
  sampleSetId: string,
  adopted: DiscoveredCandidate[],
): Promise<string[]> {
  if (!adopted.length) return [];
  const ss = await ds.getRepository(SampleSetEntity).findOneByOrFail({ id: sampleSetId });
  return ds.transaction(async (m) => {
    const repo = m.getRepository(FeatureEntity);
    const made: string[] = [];
    for (const c of adopted) {
      if (await repo.existsBy({ businessLine: experiment.businessLine, name: c.name })) continue;
      const ast = parseExprJson(c.expression);
      // (the feature-table features it reads are registered features of the line: the model reads them)
      const checked = checkExpr(ast, exprContext(ss, await refTargets(ds, null, experiment.businessLine, ast)), c.kind);
      const f = await repo.save(
        repo.create({
          name: c.name,
          businessLine: experiment.businessLine,
          owner: experiment.owner,
          kind: checked.kind,
          description: `discovered by experiment ${experiment.id}: ${c.text}`,
          featureTableId: null,
          sourceTable: null,
          sourceColumn: null,
          entityKey: null,
          transform: { type: 'none' },
          expression: expressionRecord(ast, checked, ss),
          costs: {},
          provenance: [],
        }),
      );
      await writeAudit(m, { user: experiment.owner, role: 'engineer', keyId: null }, {
        action: 'feature.discovered',
        businessLine: f.businessLine,
        targetType: 'feature',
        targetId: f.id,
        details: { name: f.name, expression: c.text, experimentId: experiment.id },
      });
      made.push(c.name);
    }
    return made;
  });
}
