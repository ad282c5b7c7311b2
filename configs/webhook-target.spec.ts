import { describe, expect, it } from 'vitest';
import { loadConfig } from './load-config';
import { addressAllowed, isPublicAddress, parseHostAllowList, webhookUrlProblem } from './webhook-target';

describe('webhook targets', () => {
  it('classifies addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(a), a).toBe(true);
  });

  it('parses the allow-list and names a bad entry', () => {
    expect(parseHostAllowList(' Hooks.Example.com, 10.0.0.0/8 ,127.0.0.1,')).toEqual({
      hosts: ['hooks.example.com'],
      ranges: ['10.0.0.0/8', '127.0.0.1'],
    });
    expect(() => parseHostAllowList('10.0.0.0/33')).toThrow(/"10\.0\.0\.0\/33"/);
    expect(() => parseHostAllowList('http://x')).toThrow(/http:\/\/x/);
  });

  it('empty list: public only; a list: only its entries', () => {
    const none = parseHostAllowList('');
    expect(addressAllowed('example.com', '93.184.216.34', none)).toBe(true);
    expect(addressAllowed('evil.example', '127.0.0.1', none)).toBe(false);
    const list = parseHostAllowList('hooks.internal,10.0.0.0/8');
    expect(addressAllowed('hooks.internal', '192.168.1.5', list)).toBe(true);
    expect(addressAllowed('other.internal', '10.2.3.4', list)).toBe(true);
    expect(addressAllowed('example.com', '93.184.216.34', list)).toBe(false);
  });

  it('checks the configured URL at config load', () => {
    expect(webhookUrlProblem('ftp://example.com/x', parseHostAllowList(''))).toMatch(/http or https/);
    expect(webhookUrlProblem('http://localhost:9/x', parseHostAllowList(''))).toMatch(/localhost/);
    expect(webhookUrlProblem('http://[::1]:9/x', parseHostAllowList(''))).toMatch(/::1/);
    expect(webhookUrlProblem('https://hooks.example.com/x', parseHostAllowList(''))).toBeNull();
    expect(() => loadConfig({ ABACUS_NOTIFY_WEBHOOK_URL: 'http://127.0.0.1:9/h' }, { fresh: true })).toThrow(
      /ABACUS_NOTIFY_WEBHOOK_URL: host 127\.0\.0\.1 .*ABACUS_WEBHOOK_ALLOWED_HOSTS/,
    );
    expect(() => loadConfig({ ABACUS_NOTIFY_WEBHOOK_URL: 'file:///etc/passwd' }, { fresh: true })).toThrow(
      /ABACUS_NOTIFY_WEBHOOK_URL: .*http or https/,
    );
    expect(() => loadConfig({ ABACUS_WEBHOOK_ALLOWED_HOSTS: 'not a host' }, { fresh: true })).toThrow(
      /ABACUS_WEBHOOK_ALLOWED_HOSTS/,
    );
    const c = loadConfig(
      { ABACUS_NOTIFY_WEBHOOK_URL: 'http://127.0.0.1:9/h', ABACUS_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
      { fresh: true },
    );
    expect(c.ABACUS_WEBHOOK_ALLOWED_HOSTS.ranges).toEqual(['127.0.0.1']);
  });

  it('has limits for bodies and imports with defaults, and names a bad one', () => {
    const c = loadConfig({}, { fresh: true });
    expect([c.ABACUS_JSON_LIMIT_KB, c.ABACUS_MAX_COLUMNS, c.ABACUS_MAX_CATEGORIES]).toEqual([1024, 2000, 100_000]);
    expect(() => loadConfig({ ABACUS_JSON_LIMIT_KB: '0' }, { fresh: true })).toThrow(/ABACUS_JSON_LIMIT_KB/);
    expect(() => loadConfig({ ABACUS_MAX_COLUMNS: 'many' }, { fresh: true })).toThrow(/ABACUS_MAX_COLUMNS/);
  });
});
