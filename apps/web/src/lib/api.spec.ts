import { describe, expect, it } from 'vitest';
import { ApiError, errorMessage, issuesOf } from './api';

describe('api errors', () => {
  it("takes the api's own message, else says the status", () => {
    expect(errorMessage(401, { statusCode: 401, message: 'unknown API key abk_AAAAAAAA…' })).toBe(
      'unknown API key abk_AAAAAAAA…',
    );
    expect(errorMessage(400, { message: ['a', 'b'] })).toBe('a; b');
    expect(errorMessage(502, null)).toBe('HTTP 502');
    expect(errorMessage(500, { message: '' })).toBe('HTTP 500');
    expect(errorMessage(404, 'text')).toBe('HTTP 404');
  });

  it('keeps the status with the message', () => {
    const e = new ApiError(403, 'viewer may not cancel experiments');
    expect(e).toBeInstanceOf(Error);
    expect([e.status, e.message, e.name]).toEqual([403, 'viewer may not cancel experiments', 'ApiError']);
    expect(e.issues).toEqual([]);
  });

  it("keeps a 400's issues (path and message), dropping malformed entries", () => {
    expect(issuesOf({ issues: [{ path: 'spec.maxDrop', message: 'Too big', code: 'too_big' }, { path: 1 }, null] })).toEqual([
      { path: 'spec.maxDrop', message: 'Too big' },
    ]);
    expect(issuesOf({ issues: 'x' })).toEqual([]);
  });
});
