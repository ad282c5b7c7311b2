// GET /serving/:id/active: the handler from the cache, the whole request inside the server, the loopback round trip.
// Run after `npm run build` with Postgres and Redis up: node bench/serving-active.cjs (uses database abacus_bench_serving).
require('reflect-metadata');
const path = require('node:path');
const R = path.resolve(__dirname, '..');
process.chdir(R);
const { loadConfig } = require(`${R}/dist/configs/index.js`);
const { createDataSource, ensureDatabase, dropDatabase, ModelEntity, BusinessLineEntity, SampleSetEntity } = require(
  `${R}/dist/libs/data/src/index.js`,
);
const { ApiKeyService } = require(`${R}/dist/libs/access/src/index.js`);
const { SYSTEM_SCOPE } = require(`${R}/dist/libs/core/src/index.js`);
const { startApi } = require(`${R}/dist/apps/api/src/bootstrap.js`);
const { ServingService } = require(`${R}/dist/libs/serving/src/index.js`);

(async () => {
  const base = loadConfig();
  const u = new URL(base.ABACUS_DATABASE_URL);
  u.pathname = '/abacus_bench_serving';
  const config = loadConfig(
    {
      ABACUS_DATABASE_URL: u.toString(),
      ABACUS_REDIS_URL: base.ABACUS_REDIS_URL,
      ABACUS_QUEUE_PREFIX: 'abacus-bench-serving',
      ABACUS_API_PORT: '0',
      ABACUS_DATA_DIR: path.join(require('node:os').tmpdir(), 'abacus-bench-serving'),
      ABACUS_RATE_LIMIT_PER_MIN: '1000000',
      ABACUS_AUTH_CACHE_MS: process.env.ABACUS_AUTH_CACHE_MS ?? '5000',
    },
    { fresh: true },
  );
  await ensureDatabase(config.ABACUS_DATABASE_URL);
  const ds = createDataSource(config);
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  const { secret } = await new ApiKeyService(ds).create({ name: 'bench', role: 'admin', lines: ['*'] }, SYSTEM_SCOPE);
  await ds.getRepository(BusinessLineEntity).save({ name: 'feed', owner: 'bench' });
  const ss = await ds.getRepository(SampleSetEntity).save(
    ds.getRepository(SampleSetEntity).create({
      name: 's',
      businessLine: 'feed',
      owner: 'b',
      files: [],
      format: 'csv',
      schema: [],
      rowCount: 1,
      labelColumn: 'click',
      keyColumns: [],
      dataVersion: 'x',
      sharingPolicy: { shareWith: [] },
    }),
  );
  for (let t = 0; t < 3; t++)
    await ds.getRepository(ModelEntity).save({
      name: 'ctr',
      version: t + 1,
      businessLine: 'feed',
      owner: 'b',
      sampleSetId: ss.id,
      features: ['a', 'b', 'c'].slice(0, 3 - t),
      tier: t,
    });
  const api = await startApi(config, { logger: false });
  const h = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const reg = await (
    await fetch(`${api.url}/api/v1/serving`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({
        model: 'ctr',
        businessLine: 'feed',
        tiers: [0, 1, 2],
        webhookUrl: 'https://hooks.example.com/x',
        secret: 'x'.repeat(20),
      }),
    })
  ).json();
  const svc = api.app.get(ServingService);
  const scope = { user: 'bench', role: 'viewer', keyId: null };
  const N = 20000;
  for (let i = 0; i < 2000; i++) await svc.active(reg.id, scope);
  const t = [];
  for (let i = 0; i < N; i++) {
    const s = process.hrtime.bigint();
    await svc.active(reg.id, scope);
    t.push(Number(process.hrtime.bigint() - s) / 1000);
  }
  // the whole request inside the server: from express's first middleware to the response's finish
  const srv = [];
  const server = api.app.getHttpServer();
  server.prependListener('request', (req, res) => {
    const s = process.hrtime.bigint();
    res.on('finish', () => {
      if (req.url.endsWith('/active')) srv.push(Number(process.hrtime.bigint() - s) / 1000);
    });
  });
  const rt = [];
  for (let i = 0; i < 3000; i++) {
    const s = process.hrtime.bigint();
    const r = await fetch(`${api.url}/api/v1/serving/${reg.id}/active`, { headers: h });
    await r.text();
    rt.push(Number(process.hrtime.bigint() - s) / 1000);
  }
  const q = (a, p) => {
    const b = [...a].sort((x, y) => x - y);
    return b[Math.floor(p * (b.length - 1))].toFixed(1);
  };
  console.log(`service.active (cache hit): p50 ${q(t, 0.5)} us, p99 ${q(t, 0.99)} us over ${N}`);
  console.log(
    `server-side request (auth, guards, handler, JSON): p50 ${q(srv, 0.5)} us, p99 ${q(srv, 0.99)} us over ${srv.length}`,
  );
  console.log(`loopback round trip: p50 ${q(rt, 0.5)} us, p99 ${q(rt, 0.99)} us`);
  await api.close();
  await ds.destroy();
  await dropDatabase(config.ABACUS_DATABASE_URL);
  process.exit(0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
