import { describe, expect, it } from 'vitest';
import { buildGate, buildStarted, sampleBuildsRunning, waitForBuilds } from './build-gate';

describe('build gate', () => {
  it('counts the running builds, each ended once however often its end is called', () => {
    expect(sampleBuildsRunning()).toBe(0);
    const a = buildStarted();
    const b = buildStarted();
    expect(sampleBuildsRunning()).toBe(2);
    a();
    a();
    expect(sampleBuildsRunning()).toBe(1);
    b();
    expect(sampleBuildsRunning()).toBe(0);
  });

  it('returns at once with no build running', async () => {
    expect(await waitForBuilds(buildGate(), 10_000)).toBeLessThan(50);
  });

  it('waits until the last running build ends', async () => {
    const a = buildStarted();
    const b = buildStarted();
    setTimeout(a, 100);
    setTimeout(b, 250);
    const waited = await waitForBuilds(buildGate(), 10_000);
    expect(sampleBuildsRunning()).toBe(0);
    expect(waited).toBeGreaterThanOrEqual(240);
    expect(waited).toBeLessThan(2_000);
  });

  it('waits no longer than its cap, and stops when told', async () => {
    const done = buildStarted();
    try {
      const capped = await waitForBuilds(buildGate(), 300);
      expect(capped).toBeGreaterThanOrEqual(290);
      expect(capped).toBeLessThan(1_000);
      let stop = false;
      setTimeout(() => (stop = true), 150);
      const stopped = await waitForBuilds(buildGate(), 10_000, () => stop);
      expect(stopped).toBeGreaterThanOrEqual(140);
      expect(stopped).toBeLessThan(1_000);
    } finally {
      done();
    }
  });
});
