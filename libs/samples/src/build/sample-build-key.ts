import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { sampleBuildRequestSchema } from './sample-build-request.schema';
import { SampleBuildError } from './sample-build.error';
import type { FeatureKind, FeatureTransform, SampleBuildRequest } from './sample-build.types';
import type { FeatureExpr } from '../expr/feature-expr.schema';

/** bump when the encoding of an unchanged request changes, so cached builds are not reused */
export const SAMPLE_BUILDER_VERSION = 2;

/** a column joined from a feature table (a table feature's, or one an expression reads by `ref`) */
export interface NormalizedTableJoin {
  file: string;
  entityKey: string;
  sampleKey: string;
  timeColumn: string | null;
  column: string;
  version?: string;
}

export type NormalizedSource =
  | { kind: 'column'; column: string }
  | ({ kind: 'table' } & NormalizedTableJoin)
  | { kind: 'expression'; expression: FeatureExpr; tables?: Record<string, NormalizedTableJoin & { kind: FeatureKind }> };

/** a table join with defaults filled in and its path made absolute */
function normalizeJoin(t: { file: string; entityKey: string; sampleKey: string; timeColumn?: string | null; version?: string }, column: string): NormalizedTableJoin {
  return {
    file: path.resolve(t.file),
    entityKey: t.entityKey,
    sampleKey: t.sampleKey,
    timeColumn: t.timeColumn ?? null,
    column,
    ...(t.version !== undefined ? { version: t.version } : {}),
  };
}

export interface NormalizedFeature {
  name: string;
  kind: FeatureKind;
  source: NormalizedSource;
  transform: FeatureTransform;
}

/** the request with defaults filled in and file paths made absolute */
export interface NormalizedRequest {
  samples: {
    file: string;
    version?: string;
    label: string;
    positive?: string | number | boolean;
    time: string | null;
    groupKey: string | null;
    outcomes?: string[];
  };
  features: NormalizedFeature[];
  split: { testFrom: number | null; testFraction: number; seed: number };
  filter: { column: string; values: string[] } | null;
  maxRows: number | null;
}

/** Validates (SampleBuildError naming the first bad field) and normalises a request. */
export function normalizeRequest(req: SampleBuildRequest): NormalizedRequest {
  const parsed = sampleBuildRequestSchema.safeParse(req);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SampleBuildError(issue.path.map(String).join('.') || '(request)', issue.message);
  }
  const r = parsed.data;
  return {
    samples: {
      file: path.resolve(r.samples.file),
      ...(r.samples.version !== undefined ? { version: r.samples.version } : {}),
      label: r.samples.label,
      ...(r.samples.positive !== undefined ? { positive: r.samples.positive } : {}),
      time: r.samples.time ?? null,
      groupKey: r.samples.groupKey ?? null,
      ...(r.samples.outcomes?.length ? { outcomes: [...r.samples.outcomes] } : {}),
    },
    features: r.features.map((f) => ({
      name: f.name,
      kind: f.kind,
      source:
        f.source.kind === 'column'
          ? { kind: 'column', column: f.source.column ?? f.name }
          : f.source.kind === 'expression'
            ? {
              kind: 'expression',
              expression: f.source.expression,
              ...(f.source.tables && Object.keys(f.source.tables).length
                ? {
                  tables: Object.fromEntries(
                    Object.entries(f.source.tables).map(([n, t]) => [n, { kind: t.kind, ...normalizeJoin(t, t.column) }]),
                  ),
                }
                : {}),
            }
            : { kind: 'table', ...normalizeJoin(f.source, f.source.column ?? f.name) },
      transform: f.transform ?? { type: 'none' },
    })),
    split: { testFrom: r.split.testFrom ?? null, testFraction: r.split.testFraction ?? 0.2, seed: r.split.seed ?? 0 },
    filter: r.filter ?? null,
    maxRows: r.maxRows ?? null,
  };
}

/** path, size and mtime of a file; SampleBuildError(field) when it is missing */
export function fileIdentity(file: string, field: string): { path: string; size: number; mtimeMs: number } {
  try {
    const s = statSync(file);
    if (!s.isFile()) throw new SampleBuildError(field, `'${file}' is not a regular file`);
    return { path: file, size: s.size, mtimeMs: s.mtimeMs };
  } catch (err) {
    if (err instanceof SampleBuildError) throw err;
    throw new SampleBuildError(field, `file '${file}' does not exist`);
  }
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function cacheKeyOf(req: NormalizedRequest): string {
  // a set read through a store: its version, not the local mirror's path and times
  const versioned = req.samples.version !== undefined;
  const files: unknown[] = [versioned ? { version: req.samples.version } : fileIdentity(req.samples.file, 'samples.file')];
  req.features.forEach((f, i) => {
    if (f.source.kind === 'table')
      files.push(
        f.source.version !== undefined ? { version: f.source.version } : fileIdentity(f.source.file, `features.${i}.source.file`),
      );
    if (f.source.kind === 'expression')
      for (const [n, t] of Object.entries(f.source.tables ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)))
        files.push(t.version !== undefined ? { version: t.version } : fileIdentity(t.file, `features.${i}.source.tables.${n}.file`));
  });
  // versioned files: the key leaves their (host-local) paths out, so every host computes the same one
  const request = {
    ...req,
    samples: versioned ? { ...req.samples, file: '' } : req.samples,
    features: req.features.map((f) =>
      f.source.kind === 'table' && f.source.version !== undefined
        ? { ...f, source: { ...f.source, file: '' } }
        : f.source.kind === 'expression' && f.source.tables
          ? {
            ...f,
            source: {
              ...f.source,
              tables: Object.fromEntries(
                Object.entries(f.source.tables).map(([n, t]) => [n, t.version !== undefined ? { ...t, file: '' } : t]),
              ),
            },
          }
          : f,
    ),
  };
  const payload = canonicalJson({ builder: SAMPLE_BUILDER_VERSION, request, files });
  return createHash('sha256').update(payload).digest('hex');
}

/**
 * Stable sha256 (hex) of the normalised request (label/time/positive/groupKey, feature defs with transforms and
 * sources, split, filter, maxRows) and the identity (absolute path, size, mtime) of the sample file and every
 * feature table file. Cheap: validates and stats files, reads no data. Throws SampleBuildError like buildSamples.
 */
export function sampleBuildKey(req: SampleBuildRequest): string {
  return cacheKeyOf(normalizeRequest(req));
}
