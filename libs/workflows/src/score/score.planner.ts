import type { DataSource } from 'typeorm';
import { InvalidInputError, type RequestScope } from '@abacus/core';
import { type ExperimentEntity, type FeatureResultEntity, type TrialEntity } from '@abacus/data';
import { JobName } from '@abacus/queue';
import type { ExperimentPlan, ExperimentPlanner } from '../experiments/experiment-planner';
import type { CreateExperiment } from '../experiments/experiment.schemas';
import { RecipeResolver } from '../model/recipe-resolver';
import { explicitPositive, requireBinaryLabel } from '../model/label-check';
import type { ScoreTrialParams } from './score-experiment.schema';

type ScoreInput = Extract<CreateExperiment, { kind: 'score' }>;

/** `score`: WOE/IV (+PSI) of every feature of a sample set, split into trials of featuresPerTrial features. */
export class ScorePlanner implements ExperimentPlanner<'score'> {
  readonly kind = 'score' as const;

  async plan(input: ScoreInput, ds: DataSource, scope: RequestScope): Promise<ExperimentPlan> {
    const spec = input.spec;
    const ss = await new RecipeResolver(ds, scope, input.businessLine).sampleSet(spec.sampleSet, 'spec.sampleSet');
    requireBinaryLabel(ss, 'spec.sampleSet');
    if (spec.positive !== undefined && !isClassOf(spec.positive, ss.labelStats!.classes)) {
      throw new InvalidInputError(
        'spec.positive',
        `"${spec.positive}" is not a value of label "${ss.labelColumn}" (values: ${ss.labelStats!.classes.join(', ')})`,
      );
    }
    const positive = spec.positive ?? explicitPositive(ss);
    const skip = new Set([ss.labelColumn, ss.timeColumn, ...ss.keyColumns].filter((c): c is string => !!c));
    const columns = ss.schema.map((c) => c.name);
    const features = spec.features ?? ss.schema.filter((c) => !skip.has(c.name) && c.kind !== 'unsupported').map((c) => c.name);
    if (!features.length) throw new InvalidInputError('spec.features', 'the sample set has no feature columns');
    features.forEach((f, i) => {
      if (!columns.includes(f))
        throw new InvalidInputError(`spec.features.${i}`, `column "${f}" is not in sample set ${ss.name}`);
      if (skip.has(f)) throw new InvalidInputError(`spec.features.${i}`, `"${f}" is the label, time or a key column`);
    });
    if (new Set(features).size !== features.length) throw new InvalidInputError('spec.features', 'duplicate feature names');
    let psiSplitTime: number | null = null;
    if (spec.psiSplitTime !== undefined) {
      if (!ss.timeColumn) throw new InvalidInputError('spec.psiSplitTime', 'the sample set has no time column');
      psiSplitTime = spec.psiSplitTime;
    } else if (ss.timeColumn && ss.timeMin !== null && ss.timeMax !== null && ss.timeMax > ss.timeMin) {
      psiSplitTime = ss.timeMin + 0.8 * (ss.timeMax - ss.timeMin);
    }
    const trials: ExperimentPlan['trials'] = [];
    for (let i = 0; i < features.length; i += spec.featuresPerTrial) {
      const params: ScoreTrialParams = {
        sampleSetId: ss.id,
        features: features.slice(i, i + spec.featuresPerTrial),
        psiSplitTime,
        binning: spec.binning,
        ...(positive !== undefined ? { positive } : {}),
      };
      trials.push({ kind: 'score', job: JobName.ScoreTrial, params: params as unknown as Record<string, unknown> });
    }
    return { spec: { ...spec, sampleSetId: ss.id, features, psiSplitTime }, trials };
  }

  summarize(_e: ExperimentEntity, trials: TrialEntity[], results: FeatureResultEntity[]): Record<string, unknown> {
    const iv = results.filter((r) => r.scorer === 'iv').sort((a, b) => b.value - a.value);
    const psi = new Map(results.filter((r) => r.scorer === 'psi').map((r) => [r.featureName, r.value]));
    return {
      features: iv.length,
      trials: trials.length,
      ranking: iv.map((r, i) => ({
        rank: i + 1,
        feature: r.featureName,
        kind: r.details.kind,
        iv: r.value,
        strength: ivStrength(r.value),
        psi: psi.get(r.featureName) ?? null,
      })),
    };
  }
}

/** Siddiqi's conventional reading of IV. */
export function ivStrength(iv: number): string {
  if (iv < 0.02) return 'useless';
  if (iv < 0.1) return 'weak';
  if (iv < 0.3) return 'medium';
  if (iv < 0.5) return 'strong';
  return 'suspicious';
}

/** Whether a spec's positive value names one of the label's two classes (booleans in any usual spelling). */
function isClassOf(positive: string, classes: string[]): boolean {
  if (classes.join() === 'false,true') return /^(yes|y|t|1|true|no|n|f|0|false)$/i.test(positive);
  return classes.some((c) => c === positive || (positive.trim() !== '' && Number(c) === Number(positive)));
}
