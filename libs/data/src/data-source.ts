import { DataSource } from 'typeorm';
import { Client } from 'pg';
import type { AppConfig } from '@abacus/configs';
import { MIGRATIONS } from '../../../migrations';
import { ENTITIES } from './entities';

/** The one DataSource definition, used by the api, the worker, the migration CLI and tests. */
export function createDataSource(config: Pick<AppConfig, 'ABACUS_DATABASE_URL' | 'ABACUS_LOG_SQL'>): DataSource {
  return new DataSource({
    type: 'postgres',
    url: config.ABACUS_DATABASE_URL,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    migrationsRun: false,
    logging: config.ABACUS_LOG_SQL,
    extra: { max: 10 },
  });
}

/** Creates the database named in the URL if the server lacks it (first start on a fresh machine). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const target = new URL(url);
  const dbName = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!dbName) throw new Error('ABACUS_DATABASE_URL: names no database');
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [dbName]);
    if (rowCount) return false;
    await client.query(`CREATE DATABASE "${dbName.replace(/"/g, '""')}"`);
    return true;
  } finally {
    await client.end();
  }
}

export async function dropDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const dbName = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${dbName.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
