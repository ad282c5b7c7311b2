import { loadConfig } from '@abacus/configs';
import { createDataSource, ensureDatabase } from '../data-source';

/** `node dist/libs/data/src/cli/migrate.js up|down|status`: the explicit migration step before api and worker start. */
async function main(): Promise<void> {
  const cmd = process.argv[2] ?? 'up';
  const config = loadConfig();
  if (cmd === 'up' && (await ensureDatabase(config.ABACUS_DATABASE_URL))) {
    console.log(`created database ${new URL(config.ABACUS_DATABASE_URL).pathname.slice(1)}`);
  }
  const ds = createDataSource(config);
  await ds.initialize();
  try {
    if (cmd === 'up') {
      const ran = await ds.runMigrations({ transaction: 'each' });
      console.log(ran.length ? `applied: ${ran.map((m) => m.name).join(', ')}` : 'migrations: up to date');
    } else if (cmd === 'down') {
      await ds.undoLastMigration({ transaction: 'each' });
      console.log('reverted the last migration');
    } else if (cmd === 'status') {
      const pending = await ds.showMigrations();
      console.log(pending ? 'migrations: pending' : 'migrations: up to date');
    } else {
      throw new Error(`unknown command "${cmd}" (expected up, down or status)`);
    }
  } finally {
    await ds.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
