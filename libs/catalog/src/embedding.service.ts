import type { DataSource, SelectQueryBuilder } from 'typeorm';
import {
  ForbiddenError,
  InvalidInputError,
  NotFoundError,
  canSeeLine,
  requireWrite,
  type Page,
  type RequestScope,
} from '@abacus/core';
import { writeAudit } from '@abacus/access';
import { SharedEmbeddingEntity } from '@abacus/data';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** names of shared embeddings: letters, digits and . _ + - (so that `name@version` is unambiguous) */
export const EMBEDDING_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;

/** `name@version`, `name` (its latest version) or an id */
export function parseEmbeddingRef(ref: string): { id: string } | { name: string; version: number | null } | null {
  if (UUID.test(ref)) return { id: ref };
  const at = ref.lastIndexOf('@');
  const name = at >= 0 ? ref.slice(0, at) : ref;
  if (!EMBEDDING_NAME.test(name)) return null;
  if (at < 0) return { name, version: null };
  const v = ref.slice(at + 1);
  if (!/^[1-9][0-9]{0,8}$/.test(v)) return null;
  return { name, version: Number(v) };
}

/** Whether experiments of `line` may initialise models from `e` (a line that may update it may use it). */
export function embeddingSharedWith(e: SharedEmbeddingEntity, line: string): boolean {
  return (
    e.businessLine === line || e.sharingPolicy.shareWith.some((l) => l === '*' || l === line) || embeddingUpdatableBy(e, line)
  );
}

/** Whether `line` may publish new versions of `e`'s name: the owner line, or one its policy's `updatableBy` names. */
export function embeddingUpdatableBy(e: SharedEmbeddingEntity, line: string): boolean {
  return e.businessLine === line || (e.sharingPolicy.updatableBy ?? []).some((l) => l === '*' || l === line);
}

function visible(qb: SelectQueryBuilder<SharedEmbeddingEntity>, scope: RequestScope) {
  if (!scope.lines) return qb;
  return qb.andWhere(
    `(e.business_line = ANY(:lines) OR (e.sharing_policy -> 'shareWith') ?| CAST(:shareKeys AS text[]) OR (e.sharing_policy -> 'updatableBy') ?| CAST(:shareKeys AS text[]))`,
    {
      lines: scope.lines,
      shareKeys: [...scope.lines, '*'],
    },
  );
}

export interface RegisterEmbedding extends Omit<SharedEmbeddingEntity, 'id' | 'version' | 'createdAt' | 'experimentId'> {
  experimentId: string | null;
}

/** The registry of shared embeddings: listing, lookup by `name@version`, idempotent registration. */
export class EmbeddingService {
  constructor(private readonly ds: DataSource) {}

  private get repo() {
    return this.ds.getRepository(SharedEmbeddingEntity);
  }

  async list(
    scope: RequestScope,
    q: { businessLine?: string; name?: string; page: number; pageSize: number },
  ): Promise<Page<SharedEmbeddingEntity>> {
    const qb = visible(this.repo.createQueryBuilder('e'), scope).orderBy('e.name', 'ASC').addOrderBy('e.version', 'DESC');
    if (q.businessLine) qb.andWhere('e.business_line = :bl', { bl: q.businessLine });
    if (q.name) qb.andWhere('e.name = :name', { name: q.name });
    const [items, total] = await qb
      .skip((q.page - 1) * q.pageSize)
      .take(q.pageSize)
      .getManyAndCount();
    return { items, total, page: q.page, pageSize: q.pageSize };
  }

  private async find(ref: string): Promise<SharedEmbeddingEntity | null> {
    const r = parseEmbeddingRef(ref);
    if (!r) return null;
    if ('id' in r) return this.repo.findOneBy({ id: r.id });
    if (r.version !== null) return this.repo.findOneBy({ name: r.name, version: r.version });
    return this.repo.findOne({ where: { name: r.name }, order: { version: 'DESC' } });
  }

  /** For reading (API, CLI): 404 when it does not exist or the caller's lines may not see it. */
  async get(ref: string, scope: RequestScope): Promise<SharedEmbeddingEntity> {
    const e = await this.find(ref);
    if (!e || !(!scope.lines || canSeeLine(scope, e.businessLine) || scope.lines.some((l) => embeddingSharedWith(e, l))))
      throw new NotFoundError('shared embedding', ref);
    return e;
  }

  /** For a model of `line` to start from: 400 naming `path` when unknown, 403 when not shared with the line. */
  async resolveFor(ref: string, line: string, path: string): Promise<SharedEmbeddingEntity> {
    if (!parseEmbeddingRef(ref)) throw new InvalidInputError(path, `"${ref}" is not name@version, a name or an id`);
    const e = await this.find(ref);
    if (!e) throw new InvalidInputError(path, `no shared embedding "${ref}" (abacus embeddings list)`);
    if (!embeddingSharedWith(e, line)) {
      throw new ForbiddenError(
        `${path}: shared embedding ${e.name}@${e.version} belongs to business line "${e.businessLine}" and is not shared with "${line}"`,
      );
    }
    return e;
  }

  /**
   * A version `line` wants to publish the next version of (embedding_update): 400 naming `path` when
   * unknown, 403 when the name's policy does not let the line update it.
   */
  async resolveForUpdate(ref: string, line: string, path: string): Promise<SharedEmbeddingEntity> {
    if (!parseEmbeddingRef(ref)) throw new InvalidInputError(path, `"${ref}" is not name@version, a name or an id`);
    const e = await this.find(ref);
    if (!e) throw new InvalidInputError(path, `no shared embedding "${ref}" (abacus embeddings list)`);
    if (!embeddingUpdatableBy(e, line)) {
      throw new ForbiddenError(
        `${path}: shared embedding ${e.name} belongs to business line "${e.businessLine}", whose policy does not let "${line}" update it (updatableBy: ${(e.sharingPolicy.updatableBy ?? []).join(', ') || 'the owner line only'})`,
      );
    }
    return e;
  }

  /**
   * The owner line sets who may use (`shareWith`) and who may update (`updatableBy`) a name: written on
   * every version of it (new versions inherit it). 404 for a name the caller cannot see, 403 for a line
   * the caller may not write or that does not own the name.
   */
  async setPolicy(
    name: string,
    body: { shareWith?: string[]; updatableBy?: string[] },
    scope: RequestScope,
  ): Promise<SharedEmbeddingEntity> {
    const latest = await this.get(name, scope);
    if (!scope.lines ? false : !scope.lines.includes(latest.businessLine)) {
      throw new ForbiddenError(
        `shared embedding ${latest.name} belongs to business line "${latest.businessLine}": only that line sets its policy`,
      );
    }
    requireWrite(scope, latest.businessLine, 'set the policy of shared embeddings');
    return this.ds.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`shared_embeddings:${latest.name}`]);
      const repo = m.getRepository(SharedEmbeddingEntity);
      const versions = await repo.find({ where: { name: latest.name }, order: { version: 'DESC' } });
      const policy = {
        shareWith: body.shareWith ?? versions[0]!.sharingPolicy.shareWith,
        updatableBy: body.updatableBy ?? versions[0]!.sharingPolicy.updatableBy ?? [],
      };
      for (const v of versions) await repo.update({ id: v.id }, { sharingPolicy: policy });
      await writeAudit(m, scope, {
        action: 'embedding.policy_set',
        businessLine: latest.businessLine,
        targetType: 'embedding',
        targetId: latest.name,
        details: { ...policy, versions: versions.length },
      });
      return { ...versions[0]!, sharingPolicy: policy };
    });
  }

  /**
   * Adds what a later step learned about a version to its provenance under `key` (its ΔAUC for the line
   * that trained it, the owner's check); the tables and everything registered stay as they were.
   */
  async annotate(id: string, key: string, value: unknown): Promise<void> {
    await this.ds.query(
      `UPDATE shared_embeddings SET provenance = provenance || jsonb_build_object($2::text, $3::jsonb) WHERE id = $1`,
      [id, key, JSON.stringify(value)],
    );
  }

  /**
   * The lines whose models start from a version: experiments with a trial initialised from it (a model
   * spec's `init`, an embedding_update), and the line that learned it when its own target models did
   * (multiply's shared embedding); with how many experiments each.
   */
  async usage(e: SharedEmbeddingEntity): Promise<{ businessLine: string; experiments: number }[]> {
    return (await this.usageOf([e])).get(e.id) ?? [];
  }

  /** `usage` of many versions (a page of the list) in one query. */
  async usageOf(es: SharedEmbeddingEntity[]): Promise<Map<string, { businessLine: string; experiments: number }[]>> {
    const rows: { id: string; business_line: string; n: string }[] = es.length
      ? await this.ds.query(
          `SELECT u.id, e.business_line, count(DISTINCT e.id) AS n
             FROM trials t JOIN experiments e ON e.id = t.experiment_id
             CROSS JOIN LATERAL (SELECT COALESCE(
               t.params -> 'recipe' -> 'init' ->> 'embeddingId',
               CASE WHEN t.params ->> 'strategy' = 'embedding_update' THEN t.params -> 'update' ->> 'embeddingId' END) AS id) u
            WHERE u.id = ANY($1::text[])
            GROUP BY u.id, e.business_line`,
          [es.map((e) => e.id)],
        )
      : [];
    const out = new Map<string, Map<string, number>>(es.map((e) => [e.id, new Map()]));
    for (const r of rows) out.get(r.id)?.set(r.business_line, Number(r.n));
    for (const e of es) {
      // the line that learned it started its own target models from it (multiply's shared embedding)
      if (e.provenance.strategy === 'union' && e.experimentId) {
        const line = e.sources.find((x) => x.role === 'target')?.businessLine ?? e.businessLine;
        const m = out.get(e.id)!;
        if (!m.has(line)) m.set(line, 1);
      }
    }
    return new Map(
      [...out].map(([id, m]) => [
        id,
        [...m]
          .map(([businessLine, experiments]) => ({ businessLine, experiments }))
          .sort((x, y) => x.businessLine.localeCompare(y.businessLine)),
      ]),
    );
  }

  byId(id: string): Promise<SharedEmbeddingEntity | null> {
    return this.repo.findOneBy({ id });
  }

  byOrigin(originKey: string): Promise<SharedEmbeddingEntity | null> {
    return this.repo.findOneBy({ originKey });
  }

  /**
   * Registers the next version of `input.name`, or returns the version already registered under
   * `input.originKey` (a retried trial registers nothing twice). Versions of one name stay in one line.
   */
  async register(input: RegisterEmbedding): Promise<SharedEmbeddingEntity> {
    if (!EMBEDDING_NAME.test(input.name)) throw new InvalidInputError('name', `"${input.name}" is not a valid embedding name`);
    return this.ds.transaction(async (m) => {
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`shared_embeddings:${input.name}`]);
      const repo = m.getRepository(SharedEmbeddingEntity);
      const done = await repo.findOneBy({ originKey: input.originKey });
      if (done) return done;
      const last = await repo.findOne({ where: { name: input.name }, order: { version: 'DESC' } });
      if (last && last.businessLine !== input.businessLine) {
        throw new InvalidInputError(
          'embedding.name',
          `shared embedding name "${input.name}" belongs to business line "${last.businessLine}"; choose another name`,
        );
      }
      return repo.save(repo.create({ ...input, version: (last?.version ?? 0) + 1 }));
    });
  }
}
