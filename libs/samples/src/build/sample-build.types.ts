import type { SlotIdSpace } from './feature-encoders';
import type { ExprTableRef, FeatureExpr } from '../expr/feature-expr.schema';
import type { FeatureKind } from '../simulator/world.types';

export type { FeatureKind };

/** How a feature's raw value is turned into what the runtime sees. */
export type FeatureTransform =
  | { type: 'none' }
  /** numeric only: sign(x) * ln(1 + |x|) */
  | { type: 'log' }
  /** numeric only: a no-op here (the runtime normalises numeric inputs with the train mean / std); accepted for the registry */
  | { type: 'standardize' }
  /** categorical / multi-id: id = FNV-1a 32-bit hash of the value's string form (UTF-8) mod hashBuckets; vocab = hashBuckets */
  | { type: 'hash'; hashBuckets: number }
  /** numeric → categorical slot: id = number of boundaries <= x (vocab = boundaries.length + 1); missing → -1 (padding) */
  | { type: 'buckets'; boundaries: number[] };

/** Where a feature's values come from. */
export type FeatureSource =
  /** the column named `column` (default: the feature's name) of the sample table itself */
  | { kind: 'column'; column?: string }
  /**
   * An entity-keyed feature table (Parquet / CSV), joined on table.entityKey = samples.sampleKey. With `timeColumn`
   * the join is point-in-time (DuckDB ASOF JOIN: the latest table row with table.time <= sample time, never a row
   * from after the impression; none → missing); without it a plain left join (the key must then be unique).
   */
  | {
      kind: 'table';
      file: string;
      entityKey: string;
      sampleKey: string;
      timeColumn?: string | null;
      column?: string;
      version?: string;
    }
  /**
   * An expression over the sample table's columns and its earlier rows (see expr/feature-expr.schema.ts),
   * its references to other features already expanded; its aggregates read only rows before each
   * impression's time. A `ref` left in it names a feature joined from a feature table: `tables` says
   * where each is joined from.
   */
  | { kind: 'expression'; expression: FeatureExpr; tables?: Record<string, ExprTableRef> };


export interface FeatureDef {
  name: string;
  kind: FeatureKind;
  source: FeatureSource;
  transform?: FeatureTransform;
}

export interface SampleBuildRequest {
  samples: {
    /**
     * the labelled sample table (Parquet / CSV), one row per impression, or a directory of Parquet
     * files (hive partition folders such as dt=2026-11-20/ become columns)
     */
    file: string;
    /**
     * the data version of a set read through a store (see @abacus/store): the build key uses it
     * instead of the file's identity, since `file` is then a local mirror whose path changes per use
     */
    version?: string;
    /** label column: exactly two classes */
    label: string;
    /** the event class; default 1 (numeric labels) or 'true' / '1' */
    positive?: string | number | boolean;
    /** time column (numeric seconds, DATE or TIMESTAMP → epoch seconds); needed for time splits and timed tables */
    time?: string | null;
    /** optional group column, returned as `keys[groupKey]` (e.g. user_id for group AUC) */
    groupKey?: string | null;
    /**
     * columns known only after the impression (conversions, dwell time, …): like the label, an
     * expression reads them only from earlier rows, as the value of an aggregate
     */
    outcomes?: string[];
  };
  features: FeatureDef[];
  split: {
    /** test = rows with time >= testFrom (time units of the sample table); needs `samples.time` */
    testFrom?: number;
    /** default 0.2: without testFrom, testFrom = the (1 - testFraction) time quantile; without time: a seeded hash split of the row index */
    testFraction?: number;
    /** seed of the hash split (default 0) */
    seed?: number;
  };
  /** optional row filter: keep only rows where this categorical column equals one of the values (e.g. domain) */
  filter?: { column: string; values: string[] };
  /** cap rows (deterministic: first N by time, then row index) for tests */
  maxRows?: number;
}

/** One sparse slot in CSR form: ids of row r are ids[offsets[r] .. offsets[r+1]); ids < 0 are padding. */
export interface EncodedSlot {
  name: string;
  ids: Int32Array;
  /** rows + 1 entries */
  offsets: Int32Array;
}

/**
 * Encoded samples of one split: structurally the runtime's ColumnarDataset (libs/runtime/src/dataset.types.ts),
 * declared here because @abacus/runtime depends on this package.
 */
export interface EncodedSplit {
  rows: number;
  numericNames: string[];
  /** rows x numericNames.length, row-major; never NaN (missing → train mean) */
  numeric: Float32Array;
  slots: EncodedSlot[];
  /** 0 / 1 */
  labels: Float32Array;
  /** `samples.groupKey` when given: integer column values as they are, other types as first-appearance codes; -1 = missing */
  keys?: Record<string, Int32Array>;
  /** each row's time in seconds, where the build was asked for them (PrepareOptions.withTimes) */
  times?: Float64Array;
}

export interface BuiltFeature {
  name: string;
  kind: FeatureKind;
  /** 'slot' for categorical, multi-id and bucketised numeric features */
  input: 'numeric' | 'slot';
  vocab?: number;
  /** fraction of built rows (train + test) where the value is missing (multi-id: empty list) */
  missingRate: number;
}

export interface BuiltSamples {
  train: EncodedSplit;
  test: EncodedSplit;
  /** exactly what the runtime's model spec needs */
  inputs: { numeric: string[]; slots: { name: string; vocab: number }[] };
  /** per slot (by name): what its ids stand for */
  idSpaces: Record<string, SlotIdSpace>;
  features: BuiltFeature[];
  split: { testFrom: number | null; trainRows: number; testRows: number; trainPositiveRate: number; testPositiveRate: number };
  /** sha256 of the request and the identities (path, size, mtime) of every file it reads: see sampleBuildKey */
  cacheKey: string;
  /** with threads: the slowest thread's read / join / encode, the assembly in encodeMs, and the whole build's wall time */
  timings: {
    readMs: number;
    joinMs: number;
    encodeMs: number;
    threads?: number;
    wallMs?: number;
    /** the ranges were read straight from the sample Parquet files (no joined copy written) */
    direct?: boolean;
  };
}

export interface BuildSamplesOptions {
  /** fraction in [0, 1], non-decreasing */
  onProgress?(fraction: number, message: string): void;
  /**
   * refuse (SampleBuildError on `samples`) a build whose splits would take more than this many bytes
   * once loaded to train on (estimateBuildBytes), before the features are read; default: no limit
   */
  memoryLimitBytes?: number;
  /** DuckDB's memory cap (MiB) while reading, joining and ordering; past it DuckDB spills to disk. Default 1024 */
  duckdbMemoryMb?: number;
  /** rows per encoded range at most (the unit of encoding, and of shard files); default DEFAULT_RANGE_ROWS */
  rangeRows?: number;
  /**
   * threads the ranges will be encoded on: a set of fewer than rangeRows x rangeThreads rows is cut
   * into smaller ranges (down to MIN_RANGE_ROWS) so that every thread has one; default 1
   */
  rangeThreads?: number;
  /**
   * bytes of joined rows (8 a value) ordered by one sort at most: a larger set read from many Parquet
   * files whose time ranges do not overlap is joined and ordered a run of files at a time, so DuckDB's
   * sort spills one run, not the whole set; default DEFAULT_JOIN_CHUNK_BYTES (4 GiB)
   */
  joinChunkBytes?: number;
  /**
   * read the ranges straight from the sample Parquet files (no joined copy written) where the build
   * allows it: every feature a column of the samples, no row cap, a numeric or absent group key, and
   * the rows already in (time, row) order in the files (checked); default true. False: always the
   * ordered, joined copy (the same build, slower)
   */
  directRanges?: boolean;
  /** string dictionaries of at most this many values are looked up by DuckDB; default MAX_SQL_DICTIONARY (65536) */
  sqlDictionaryMax?: number;
  /**
   * a sample file whose rows are out of (time, row) order is read in slices of about this many encoded
   * bytes, each once (default UNSORTED_RANGE_BYTES, 512 MiB; at least a range's rows)
   */
  unsortedRangeBytes?: number;
  /** where the scratch DuckDB database and its spill files go (removed after); default the OS temp directory */
  workDir?: string;
}
