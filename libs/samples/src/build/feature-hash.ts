/**
 * 32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193) over the UTF-8 bytes of `s` (lone surrogates
 * encoded as U+FFFD, as TextEncoder does). Stable across processes, platforms and versions.
 */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      h = Math.imul(h ^ c, 0x01000193);
      continue;
    }
    if (c < 0x800) {
      h = Math.imul(h ^ (0xc0 | (c >> 6)), 0x01000193);
      h = Math.imul(h ^ (0x80 | (c & 0x3f)), 0x01000193);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        h = Math.imul(h ^ (0xf0 | (cp >> 18)), 0x01000193);
        h = Math.imul(h ^ (0x80 | ((cp >> 12) & 0x3f)), 0x01000193);
        h = Math.imul(h ^ (0x80 | ((cp >> 6) & 0x3f)), 0x01000193);
        h = Math.imul(h ^ (0x80 | (cp & 0x3f)), 0x01000193);
        continue;
      }
      c = 0xfffd;
    }
    h = Math.imul(h ^ (0xe0 | (c >> 12)), 0x01000193);
    h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), 0x01000193);
    h = Math.imul(h ^ (0x80 | (c & 0x3f)), 0x01000193);
  }
  return h >>> 0;
}

/** hash-bucket id of a value: fnv1a32(String(value)) mod buckets (integers hash as their decimal string) */
export function hashBucket(value: string | number, buckets: number): number {
  return fnv1a32(typeof value === 'string' ? value : String(value)) % buckets;
}

/** murmur3 fmix32 */
function fmix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/** uniform in [0, 1) from (row index, seed): fmix32(rowIndex XOR fmix32(seed + 0x9e3779b9)) / 2^32 */
export function rowHashUnit(rowIndex: number, seed: number): number {
  return fmix32((rowIndex ^ fmix32((seed + 0x9e3779b9) | 0)) | 0) / 4294967296;
}
