const { DuckDBInstance } = require('@duckdb/node-api');
(async () => {
  const db = await DuckDBInstance.create(':memory:', { threads: '2' }); const con = await db.connect();
  await con.run(`CREATE TABLE s AS SELECT ts::DOUBLE AS __t, * FROM '/tmp/w2m/samples/feed.parquet'`);
  const ms = ['c_noise_num','c_page_depth','c_position','d_spend','d_visits','i_age_days','i_hist_ctr','i_noise_num'];
  for (const mode of ['exclude', 'eps', 'exclude', 'eps']) {
    const cols = [];
    for (const m of ms) for (const w of [3600, 86400, 604800, 2592000]) {
      const frame = mode === 'exclude' ? `RANGE BETWEEN ${w}.0 PRECEDING AND CURRENT ROW EXCLUDE GROUP` : `RANGE BETWEEN ${w}.0 PRECEDING AND 0.001 PRECEDING`;
      cols.push(`avg(${m}) OVER (PARTITION BY user_id, u_gender ORDER BY __t ${frame})`);
    }
    const t0 = Date.now();
    await con.run(`CREATE OR REPLACE TABLE o AS SELECT ${cols.join(', ')} FROM s`);
    console.log(mode, cols.length, Date.now() - t0, 'ms');
  }
})();
