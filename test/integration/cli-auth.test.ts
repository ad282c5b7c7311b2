import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { createDataSource } from '@abacus/data';
import { startApi, type ApiHandle } from '../../apps/api/src/bootstrap';
import { createTestEnv, type TestEnv } from '../support/test-env';
import { cli } from '../support/processes';

/** The CLI's keys, login, whoami and audit commands against a running API (the built CLI as a child process). */
let env: TestEnv;
let api: ApiHandle;
let ds: DataSource;
let creds: string;
let bob: { id: string; secret: string };

/** the CLI with no key in the environment and its own credentials file */
const run = (args: string[], extra: Record<string, string> = {}) =>
  cli(args, { ...env.env, ABACUS_API_URL: api.url, ABACUS_API_KEY: '', ABACUS_CREDENTIALS_FILE: creds, ...extra }, 60_000);

beforeAll(async () => {
  env = await createTestEnv();
  api = await startApi(env.config, { logger: false });
  ds = createDataSource(env.config);
  await ds.initialize();
  creds = path.join(env.dataDir, 'cli', 'credentials.json');
});

afterAll(async () => {
  await ds?.destroy();
  await api?.close();
  await env?.teardown();
});

const keyCount = async () => Number((await ds.query('SELECT count(*)::int AS n FROM api_keys'))[0].n);

describe('CLI access commands', () => {
  it('without a key says how to get one and exits non-zero', async () => {
    const r = await run(['samples', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /no API key for http:\/\/127\.0\.0\.1:\d+: run `abacus login --key <key>`.*ABACUS_API_KEY.*abacus keys bootstrap/,
    );
  });

  it('bootstraps an admin key from the database once, stores it 0600, and uses it', async () => {
    const before = await keyCount();
    const first = await run(['keys', 'bootstrap']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /created admin key abk_\S+ \(local-admin, all business lines\)\n {2}secret: abk_[A-Za-z0-9_-]{43}\n/,
    );
    expect(fs.statSync(creds).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(creds)).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(fs.readFileSync(creds, 'utf8')) as { keys: Record<string, { key: string }> };
    expect(Object.keys(stored.keys)).toEqual([api.url]);
    expect(first.stdout).toContain(stored.keys[api.url].key);
    const again = await run(['keys', 'bootstrap']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/a working key for .* is already stored/);
    expect(await keyCount()).toBe(before + 1);
    const who = await run(['keys', 'whoami']);
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout).toMatch(/^local-admin \(admin; lines: \*; key abk_\S+…; active\)/);
    expect((await run(['lines', 'create', 'feed'])).code).toBe(0);
  });

  it('creates a scoped key (secret shown once), logs in with it, and the role is enforced', async () => {
    const c = await run([
      'keys',
      'create',
      '--name',
      'bob',
      '--role',
      'viewer',
      '--lines',
      'feed',
      '--expires-in-days',
      '30',
      '--json',
    ]);
    expect(c.code, c.stderr).toBe(0);
    bob = JSON.parse(c.stdout) as { id: string; secret: string };
    expect(bob.secret).toMatch(/^abk_/);
    const bobCreds = path.join(env.dataDir, 'cli', 'bob.json');
    const login = await run(['login', '--key', bob.secret], { ABACUS_CREDENTIALS_FILE: bobCreds });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toMatch(/logged in to .* as bob \(viewer; lines: feed\)/);
    const who = await run(['keys', 'whoami', '--json'], { ABACUS_CREDENTIALS_FILE: bobCreds });
    expect(JSON.parse(who.stdout)).toMatchObject({ name: 'bob', role: 'viewer', lines: ['feed'] });
    const denied = await run(['lines', 'create', 'search'], { ABACUS_CREDENTIALS_FILE: bobCreds });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/HTTP 403: role viewer may not POST \/api\/v1\/business-lines \(needs admin or above\)/);
    // ABACUS_API_KEY wins over the stored key
    const asAdmin = await run(['keys', 'whoami'], { ABACUS_CREDENTIALS_FILE: bobCreds, ABACUS_API_KEY: env.adminKey });
    expect(asAdmin.stdout).toMatch(/^test-admin \(admin/);
    const bad = await run(['login', '--key', 'abk_short'], { ABACUS_CREDENTIALS_FILE: bobCreds });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--key: an Abacus API key/);
    const unknown = await run(['login', '--key', `abk_${'A'.repeat(43)}`], {
      ABACUS_CREDENTIALS_FILE: path.join(env.dataDir, 'cli', 'x.json'),
    });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/HTTP 401: unknown API key/);
    expect(fs.existsSync(path.join(env.dataDir, 'cli', 'x.json'))).toBe(false);
  });

  it('lists keys without secrets, revokes, and shows the audit log', async () => {
    const list = await run(['keys', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/bob\s+viewer\s+feed\s+active until/);
    expect(list.stdout).not.toContain(bob.secret);
    const rev = await run(['keys', 'revoke', bob.id]);
    expect(rev.code, rev.stderr).toBe(0);
    expect(rev.stdout).toMatch(/revoked API key abk_\S+ \(bob\)/);
    const after = await run(['keys', 'whoami'], { ABACUS_API_KEY: bob.secret });
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/HTTP 401: API key abk_\S+ \(bob\) was revoked at/);
    const audit = await run(['audit', 'list', '--action', 'key.revoked', '--json']);
    expect(audit.code, audit.stderr).toBe(0);
    expect((JSON.parse(audit.stdout) as { items: { targetId: string; actorName: string }[] }).items).toEqual([
      expect.objectContaining({ targetId: bob.id, actorName: 'local-admin' }),
    ]);
    const text = await run(['audit', 'list', '--line', 'feed']);
    expect(text.stdout).toMatch(/local-admin\s+admin\s+business_line\.created\s+feed/);
    const badFlags = await run(['keys', 'create', '--name', 'x', '--role', 'root', '--lines', 'feed,*']);
    expect(badFlags.code).toBe(1);
    expect(badFlags.stderr).toMatch(/--role: .*; --lines: "\*" \(all lines\) cannot be combined/);
    const badSince = await run(['audit', 'list', '--since', 'yesterday']);
    expect(badSince.stderr).toMatch(/--since: /);
  });
});
