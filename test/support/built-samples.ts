import { expect } from 'vitest';
import type { BuiltSamples } from '../../libs/samples/src/build/sample-build.types';

/** Two builds of the same request are the same set: every array bit for bit, the split, features and id spaces. */
export function expectSameBuild(a: BuiltSamples, b: BuiltSamples): void {
  for (const s of ['train', 'test'] as const) {
    expect(b[s].rows).toBe(a[s].rows);
    expect(Buffer.from(b[s].numeric.buffer).equals(Buffer.from(a[s].numeric.buffer))).toBe(true);
    expect(Array.from(b[s].labels)).toEqual(Array.from(a[s].labels));
    expect(b[s].keys ? Object.keys(b[s].keys) : []).toEqual(a[s].keys ? Object.keys(a[s].keys) : []);
    for (const [k, v] of Object.entries(a[s].keys ?? {})) expect(Array.from(b[s].keys![k])).toEqual(Array.from(v));
    for (const [i, slot] of a[s].slots.entries()) {
      expect(Array.from(b[s].slots[i].ids)).toEqual(Array.from(slot.ids));
      expect(Array.from(b[s].slots[i].offsets)).toEqual(Array.from(slot.offsets));
    }
  }
  expect(b.split).toEqual(a.split);
  expect(b.features).toEqual(a.features);
  expect(b.idSpaces).toEqual(a.idSpaces);
}
