import { z } from 'zod';
import { parseHostAllowList, webhookUrlProblem } from './webhook-target';

/** True for a time zone name the runtime's Intl knows (IANA names, UTC). */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const bool = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no'])])
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes');

/**
 * Every setting of Abacus, keyed by its environment variable. An optional JSON file
 * (ABACUS_CONFIG_FILE) supplies the same keys; the environment wins over the file.
 */
export const configSchema = z
  .object({
    ABACUS_DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/abacus'),
    ABACUS_REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
    /** BullMQ key prefix: separate deployments (and test runs) sharing one Redis use different prefixes */
    ABACUS_QUEUE_PREFIX: z
      .string()
      .regex(/^[a-zA-Z0-9_:-]+$/, 'letters, digits, _ : - only')
      .default('abacus'),
    ABACUS_API_HOST: z.string().min(1).default('0.0.0.0'),
    ABACUS_API_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    /** where the CLI finds the API */
    ABACUS_API_URL: z.string().url().default('http://localhost:3000'),
    /** sample sets, feature tables, built samples and checkpoints live under this directory */
    ABACUS_DATA_DIR: z.string().min(1).default('.data'),
    /** S3 endpoint of every s3:// URL without its own entry in ABACUS_STORES_FILE (MinIO, Ceph RGW, R2); unset = AWS */
    ABACUS_S3_ENDPOINT: z.string().url().optional(),
    ABACUS_S3_REGION: z.string().min(1).optional(),
    /** path-style addressing (http://endpoint/bucket/key); on by default when ABACUS_S3_ENDPOINT is set */
    ABACUS_S3_FORCE_PATH_STYLE: bool.optional(),
    /** JSON file of S3 settings (endpoint, region, credentials) per s3://bucket/ prefix */
    ABACUS_STORES_FILE: z.string().min(1).optional(),
    /**
     * the deployment's store (s3://bucket/prefix/ or file:///mnt/shared/abacus/): uploads, built samples,
     * checkpoints and shared embeddings go through it, so hosts share nothing else; unset = the data directory
     */
    ABACUS_STORE_URL: z.string().min(1).optional(),
    /** the local cache of store objects on each host (shared by its worker processes); unset = ABACUS_DATA_DIR/cache */
    ABACUS_CACHE_DIR: z.string().min(1).optional(),
    /** its bound in GiB, least recently used objects out first */
    ABACUS_CACHE_GB: z.coerce.number().positive().default(50),
    ABACUS_RUNTIME_BACKEND: z.enum(['auto', 'cpu', 'cuda', 'tfjs']).default('auto'),
    /**
     * CPU forward of predict / evaluate / ablate: unset = bf16 (FP32 sums) where the CPU has AMX-BF16,
     * or AVX512-BF16 on AMD, FP32 elsewhere; 'fp32' forces FP32. Read by the native addon itself;
     * listed here so a bad value stops start-up. Training always runs in FP32.
     */
    ABACUS_CPU_EVAL_PRECISION: z.enum(['fp32', 'avx512bf16']).optional(),
    /** CUDA GEMMs: 'tf32' (default) or 'fp32'. Read by the CUDA addon; listed so a bad value stops start-up. */
    ABACUS_CUDA_MATH: z.enum(['tf32', 'fp32']).optional(),
    /** CUDA evaluation forward with TF32 math: BF16 inputs (default) or 'tf32'. Read by the CUDA addon. */
    ABACUS_CUDA_EVAL_PRECISION: z.enum(['bf16', 'tf32']).optional(),
    /** CUDA evaluate({ offThread }) (a warm check's validation): metrics computed on the GPU (default 'device') or on the host from the predictions copied back ('host'). Read by the runtime's CUDA backend. */
    ABACUS_CUDA_EVAL_METRICS: z.enum(['device', 'host']).optional(),
    /** GiB of GPU memory a CUDA model's embedding tables with their sparse optimizer state may take; above it they stay in host memory with a device cache of their rows. Read by the CUDA addon. */
    ABACUS_HBM_BUDGET_GB: z.coerce.number().positive().optional(),
    /** per-table load factors: the share of each table's rows a CUDA model's device cache holds, its tables then in host memory ('0.2', or 'slotA=0.5,*=0.1'). Read by the runtime's CUDA backend. */
    ABACUS_HBM_LOAD_FACTORS: z.string().regex(/^\s*([^=,\s]+\s*=\s*)?[0-9.eE+-]+\s*(,\s*[^=,\s]+\s*=\s*[0-9.eE+-]+\s*)*$/, 'a factor, or name=factor pairs').optional(),
    /** a CUDA model's embedding tables in host memory with a device cache of exactly this many rows, whatever their size (tests, benchmarks). Read by the CUDA addon. */
    ABACUS_CUDA_CACHE_ROWS: z.coerce.number().int().positive().optional(),
    /** CUDA training data: '1' always streamed from the host, '0' always resident; unset = streamed when it would take over half the free GPU memory */
    ABACUS_CUDA_STREAM: z.enum(['0', '1']).optional(),
    /** MiB within which a CUDA model keeps more than 3 (up to 16) data sets resident on the GPU (default 1024). Read by the CUDA addon. */
    ABACUS_CUDA_RESIDENT_SMALL_MB: z.coerce.number().int().min(0).optional(),
    /** '0': a CUDA step's sparse update walks each row's entries with one thread per dimension (no chunk leads; for comparisons). Read by the CUDA addon. */
    ABACUS_CUDA_SPARSE_LEADS: z.enum(['0', '1']).optional(),
    /** set: the CUDA addon logs graph captures, streamed-fit figures and each resident epoch's step time (host enqueue vs device) to stderr */
    ABACUS_CUDA_VERBOSE: z.string().optional(),
    /** '1': the process's first CUDA fit runs under a CUPTI trace; its kernels (µs a step) go to stderr as one line */
    ABACUS_CUDA_TRACE_FIRST_FIT: z.enum(['0', '1']).optional(),
    /** CUDA training streamed from mapped shards: '0' packs each batch from the shards' columns instead of from row-major copies of each window */
    ABACUS_CUDA_RECORDS: z.enum(['0', '1']).optional(),
    /**
     * CUDA training streamed from mapped shards: unset = 'window', each window of the epoch's shuffle
     * copied by column and held on the device (three at a time), each step gathering its batch there;
     * 'device' = row-major copies of each window, each batch's records shipped as they are and unpacked
     * on the device; 'host' = those records packed into the batch on the host. Read by the CUDA addon.
     */
    ABACUS_CUDA_UNPACK: z.enum(['device', 'window', 'host']).optional(),
    /**
     * With the windows held on the device: where a batch's rows are in them (8 bytes a row) is read by
     * the step from pinned host memory (unset = 'mapped') or copied to the device first ('copy').
     * Read by the CUDA addon; listed so a bad value stops start-up.
     */
    ABACUS_CUDA_WINDOW_PLACES: z.enum(['mapped', 'copy']).optional(),
    /** threads that copy the windows of CUDA training streamed from mapped shards; unset = the cores (up to 16) less two. Read by the CUDA addon. */
    ABACUS_CUDA_COPY_THREADS: z.coerce.number().int().min(1).max(256).optional(),
    /**
     * host memory (MiB) the CUDA fits streamed from the host may hold at once, in one worker: a
     * streamed fit waits while those running hold more than the budget leaves (one always runs).
     * Read by the CUDA addon; listed so a bad value stops start-up.
     */
    ABACUS_STREAM_HOST_MB: z.coerce.number().int().min(64).optional(),
    /** the worker logs its memory (resident set, V8 heap, typed arrays) every this many seconds; 0 = never */
    ABACUS_MEMORY_LOG_SECONDS: z.coerce.number().min(0).default(0),
    /**
     * the most memory (MiB) a worker lets one sample build take (rows x features, estimated before
     * the features are read); a larger build fails its trial with an error naming this limit.
     * 0 = three quarters of the machine's memory
     */
    ABACUS_SAMPLE_MEMORY_MB: z.coerce.number().int().min(0).default(0),
    /**
     * DuckDB's memory cap (MiB) for each sample build and IV scoring pass (reading, ordering, joining,
     * aggregating); past it DuckDB spills to the data directory, so a set of any size builds within it
     */
    ABACUS_DUCKDB_MEMORY_MB: z.coerce.number().int().min(64).default(2048),
    /** rows per encoded range of a sample build at most (the unit of encoding, threading and shard files; fewer where that gives every build thread one) */
    ABACUS_BUILD_RANGE_ROWS: z.coerce.number().int().min(1024).default(262144),
    /** native threads per trial; 0 = all cores */
    ABACUS_RUNTIME_THREADS: z.coerce.number().int().min(0).max(1024).default(0),
    /**
     * independent fits a trial trains at once on the CPU backend (a scratch check's seeds, the
     * confirm's fits, add's leave-one-in seeds, a divide tier's seeds), each on its share of
     * ABACUS_RUNTIME_THREADS; 0 = min(4, the cores). 1 = one after another, each on every thread.
     * Warm checks run one after another on every thread whatever this is
     */
    ABACUS_HOST_FITS: z.coerce.number().int().min(0).max(64).default(0),
    ABACUS_WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
    /**
     * where POST /features/costs/measure times the forward: auto = on a worker with a GPU when one
     * listens, else in the api; api = in the api process (its own backend); worker = on a worker (one
     * with a GPU first); gpu = only on a worker with a GPU. A request's `on` overrides it.
     */
    ABACUS_COST_MEASURE_ON: z.enum(['auto', 'api', 'worker', 'gpu']).default('auto'),
    /** how long the api waits for a worker's cost measurement before answering 503 (ms) */
    ABACUS_COST_MEASURE_TIMEOUT_MS: z.coerce.number().int().min(1000).default(300_000),
    /**
     * worker threads an IV scoring trial reads and bins its columns on (the columns dealt among
     * them; the report is the same); 0 = the cores the sample build's threads leave (2 to 64), and
     * every core (2 to 64) for a `score` experiment's trial when no sample build runs in the worker
     */
    ABACUS_SCORE_THREADS: z.coerce.number().int().min(0).max(64).default(0),
    /**
     * on a GPU worker (the CPU backend ignores it: the fit beside the scoring would take the build's cores),
     * how long an IV scoring trial waits, at most, for the sample builds running in its worker (before it
     * starts and between columns), so it does not take the cores the build's encoding needs; a subtract's
     * scoring then runs beside its base model's fit instead of its build. 0 = score beside builds
     */
    ABACUS_SCORE_BUILD_WAIT_MS: z.coerce.number().int().min(0).max(3_600_000).default(120_000),
    /**
     * the largest scoring (the set's rows x the features scored) that waits for the worker's sample
     * builds (ABACUS_SCORE_BUILD_WAIT_MS); a larger one starts at once beside them: after the build,
     * beside the base fit, it would outlast the fit and hold the prune up. 0 = never wait
     */
    ABACUS_SCORE_BUILD_WAIT_CELLS: z.coerce.number().int().min(0).default(200_000_000),
    /**
     * worker threads a sample build encodes its row ranges on (dealt among them, each thread reading its
     * ranges from the build's DuckDB file; the built set is the same); 0 = min(8, the machine's cores),
     * 1 = the worker's main thread
     */
    ABACUS_BUILD_THREADS: z.coerce.number().int().min(0).max(64).default(0),
    /**
     * models a trial trains at once on one GPU (the seeds of a retraining check, the confirm step's
     * fits), each on its own CUDA stream; further fits spill onto the worker's other free GPUs.
     * Off the GPU fits run one at a time (every core trains one model).
     */
    ABACUS_GPU_LANES: z.coerce.number().int().min(1).max(16).default(3),
    /**
     * let a trial's fits spill onto the worker's other GPUs free at the moment (borrowed for the batch;
     * a worker over several GPUs — scripts/gpu-host.sh runs one worker per GPU instead).
     * Off by default: on a 2 x H100 host 6 of 10 subtracts with it and 3 lanes failed (cublasLtMatmul
     * status 13/14), while lanes on one GPU did not (5 of 5); see bench/README.md
     */
    ABACUS_GPU_BORROW: bool.default(false),
    /**
     * a subtract's pruning fits, beside each retraining check, the checks it would ask for next
     * whichever way this one goes (this many verdicts ahead; 1 = up to 2 more sets, 2 = up to 6); the
     * decisions are the same, the sets asked for later are at hand. 0 (off) by default: on an H200 the
     * extra fits slowed the checks beside them more than they saved (bench/README.md)
     */
    ABACUS_PRUNE_LOOKAHEAD: z.coerce.number().int().min(0).max(3).default(0),
    /**
     * the subtract's prune step trains the confirm step's whole-model fits (its first fresh seeds)
     * beside its checks, and the confirm finds them done; `auto` = on the GPU only (on the CPU it
     * moves the same work earlier)
     */
    ABACUS_CONFIRM_AHEAD: z.union([z.literal('auto'), bool]).default('auto'),
    /**
     * a subtract's warm retraining checks restore lane models from the trained model's state in place
     * (on the GPU device to device) and switch the checked inputs off inside the model, over the same
     * rows for every set; false: each fit loads the trained model's checkpoint and trains on copies of
     * the rows with the inputs switched off (the same decisions, slower)
     */
    ABACUS_FINE_TUNE_IN_PLACE: bool.default(true),
    /**
     * a subtract's warm retraining checks (in place) become fit.check jobs that every worker of the
     * backend takes, this one included, on every GPU of every host; each worker opens the prune's
     * samples and model once (announced when the prune starts). `auto`: on the GPU when at least two
     * workers listen on its fits queue; true: on any backend, even with one worker; false: every check
     * on the prune's own worker. The same checks and decisions either way.
     */
    ABACUS_PRUNE_SPREAD: z.union([z.literal('auto'), bool]).default('auto'),
    /**
     * fault injection, for tests of the recovery path only: the first attempt of the first trial of
     * this kind (e.g. `train`) that any worker sharing the data directory runs starts with a GPU fault
     * that loses the process's CUDA context (on the CPU backend: the error such a fault raises). The
     * worker then exits and its supervisor restarts it; the trial runs again on the fresh process.
     */
    ABACUS_DEBUG_DEVICE_FAULT: z
      .string()
      .regex(/^[a-z][a-z-]*$/, 'a trial kind, e.g. train')
      .optional(),
    /** attempts per trial job before it is marked failed */
    ABACUS_TRIAL_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
    /** how long a SIGTERM'd worker lets its current trial finish before releasing it back to the queue */
    ABACUS_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
    /** BullMQ lock duration; a worker that dies loses its job to another after about this long */
    ABACUS_JOB_LOCK_MS: z.coerce.number().int().min(1000).default(30_000),
    /**
     * how often a worker looks for experiments whose queue jobs were lost (Redis restarted without
     * persistence, a job that failed while Postgres was down) and re-queues or fails them; 0 = never
     */
    ABACUS_REAPER_INTERVAL_MS: z.coerce.number().int().min(0).default(60_000),
    /**
     * without a deployment store: built sample sets no trial has used for this many days are removed
     * from the data directory (checked at worker start and every 6 hours); 0 keeps them all
     */
    ABACUS_BUILT_KEEP_DAYS: z.coerce.number().min(0).default(14),
    /** the reaper leaves experiments younger than this alone (their flow may still be being enqueued) */
    ABACUS_REAPER_MIN_AGE_MS: z.coerce.number().int().min(0).default(60_000),
    ABACUS_LOG_LEVEL: z.enum(['error', 'warn', 'log', 'debug', 'verbose']).default('log'),
    ABACUS_LOG_SQL: bool.default(false),
    /** where experiment verdicts are POSTed (signed JSON); unset = no notifications */
    ABACUS_NOTIFY_WEBHOOK_URL: z
      .string()
      .url()
      .refine((u) => /^https?:$/.test(new URL(u).protocol), 'must be an http or https URL')
      .optional(),
    /**
     * webhook targets allowed besides public addresses: comma-separated host names, IP addresses or CIDR
     * ranges (e.g. `hooks.internal,10.0.0.0/8,127.0.0.1`). Empty = public addresses only (no loopback,
     * private or link-local); non-empty = only targets matching an entry.
     */
    ABACUS_WEBHOOK_ALLOWED_HOSTS: z
      .string()
      .default('')
      .transform((s, ctx) => {
        try {
          return parseHostAllowList(s);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
          return z.NEVER;
        }
      }),
    /**
     * how long the API may trust a key it has checked without asking Postgres again (0 = never cache).
     * A revocation reaches every API process at once through Redis; this bounds the window only while
     * Redis is unreachable.
     */
    ABACUS_AUTH_CACHE_MS: z.coerce.number().int().min(0).max(300_000).default(5000),
    /** attempts of one serving switch webhook before it is marked failed */
    ABACUS_SERVING_WEBHOOK_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
    /** first retry delay of a serving webhook; doubled on each further attempt */
    ABACUS_SERVING_WEBHOOK_BACKOFF_MS: z.coerce.number().int().min(10).max(3_600_000).default(2000),
    /** how often the api evaluates served models' schedules (a window opening or closing switches tier); 0 = never */
    ABACUS_SERVING_SCHEDULE_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
    /** time zone of report schedules that name none (IANA name, e.g. Europe/Berlin) */
    ABACUS_REPORT_TZ: z
      .string()
      .default('UTC')
      .refine((tz) => isTimeZone(tz), 'an IANA time zone such as UTC or Europe/Berlin'),
    /** cron of report schedules that name none: weekly, Monday 06:00 */
    ABACUS_REPORT_CRON: z.string().min(1).default('0 6 * * 1'),
    /** a feature's PSI between the previous report's data and this one's at or above this is reported as drift */
    ABACUS_REPORT_PSI_THRESHOLD: z.coerce.number().gt(0).max(10).default(0.1),
    /** a change of a feature's IV (absolute) at or above this since the previous report is reported as drift */
    ABACUS_REPORT_IV_DRIFT: z.coerce.number().gt(0).max(10).default(0.02),
    /** SMTP server for report e-mails; unset = no e-mail */
    ABACUS_SMTP_HOST: z.string().min(1).optional(),
    ABACUS_SMTP_PORT: z.coerce.number().int().min(1).max(65535).default(587),
    /** true: TLS from the start (port 465); false: STARTTLS when the server offers it */
    ABACUS_SMTP_SECURE: bool.default(false),
    ABACUS_SMTP_USER: z.string().min(1).optional(),
    ABACUS_SMTP_PASSWORD: z.string().min(1).optional(),
    /** the From address of report e-mails (required with ABACUS_SMTP_HOST) */
    ABACUS_SMTP_FROM: z.string().email().optional(),
    /** HMAC-SHA256 key for the x-abacus-signature header */
    ABACUS_NOTIFY_WEBHOOK_SECRET: z.string().min(16, 'at least 16 characters').optional(),
    ABACUS_UPLOAD_LIMIT_MB: z.coerce.number().int().min(1).max(102_400).default(2048),
    /** largest JSON or urlencoded request body; larger ones are answered 413 */
    ABACUS_JSON_LIMIT_KB: z.coerce.number().int().min(1).max(1_048_576).default(1024),
    /** most columns an imported CSV/Parquet file may have */
    ABACUS_MAX_COLUMNS: z.coerce.number().int().min(2).max(100_000).default(2000),
    /** most distinct values of one categorical (text) column of an import; key columns are exempt */
    ABACUS_MAX_CATEGORIES: z.coerce.number().int().min(2).max(100_000_000).default(100_000),
    /** the CLI's API key (wins over the one `abacus login` stored); the shape of libs/access's keys */
    ABACUS_API_KEY: z
      .string()
      .regex(/^abk_[A-Za-z0-9_-]{43}$/, 'an Abacus API key: "abk_" followed by 43 base64url characters')
      .optional(),
    /** where `abacus login` stores keys (per API URL); default $XDG_CONFIG_HOME/abacus/credentials.json */
    ABACUS_CREDENTIALS_FILE: z.string().min(1).optional(),
    /** the XDG base directory for user configuration (default ~/.config); read here so nothing else reads the environment */
    XDG_CONFIG_HOME: z.string().min(1).optional(),
    /** requests per minute per API key (per client IP without a valid key); beyond it the API answers 429 */
    ABACUS_RATE_LIMIT_PER_MIN: z.coerce.number().int().min(1).max(1_000_000).default(600),
    /** comma-separated origins allowed to call the API from a browser; empty = no CORS headers at all */
    ABACUS_CORS_ORIGINS: z
      .string()
      .default('')
      .transform((s) =>
        s
          .split(',')
          .map((o) => o.trim())
          .filter(Boolean),
      )
      .pipe(
        z.array(z.string().regex(/^https?:\/\/[^/\s]+$/, 'origins like https://abacus.example.com (scheme and host, no path)')),
      ),
  })
  .superRefine((c, ctx) => {
    if (c.ABACUS_SMTP_HOST && !c.ABACUS_SMTP_FROM) {
      ctx.addIssue({ code: 'custom', path: ['ABACUS_SMTP_FROM'], message: 'required when ABACUS_SMTP_HOST is set' });
    }
    if (!!c.ABACUS_SMTP_USER !== !!c.ABACUS_SMTP_PASSWORD) {
      ctx.addIssue({
        code: 'custom',
        path: ['ABACUS_SMTP_PASSWORD'],
        message: 'give ABACUS_SMTP_USER and ABACUS_SMTP_PASSWORD together',
      });
    }
    if (!c.ABACUS_NOTIFY_WEBHOOK_URL) return;
    const problem = webhookUrlProblem(c.ABACUS_NOTIFY_WEBHOOK_URL, c.ABACUS_WEBHOOK_ALLOWED_HOSTS);
    if (problem) ctx.addIssue({ code: 'custom', path: ['ABACUS_NOTIFY_WEBHOOK_URL'], message: problem });
  });

export type AppConfig = z.output<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;
