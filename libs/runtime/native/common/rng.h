// Seeded generators: splitmix64 for seeding / hashing, xoshiro256** for streams.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace abacus {

inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
inline uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0) {
  uint64_t s = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) ^ (c * 0xD1B54A32D192ED03ULL);
  return splitmix64(s);
}

struct Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (auto& v : s) v = splitmix64(seed);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
  }
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
  uint64_t below(uint64_t n) { return n ? (uint64_t)(uniform() * n) % n : 0; }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

// Fisher-Yates permutation of 0..n-1.
inline void seeded_permutation(std::vector<int64_t>& p, int64_t n, uint64_t seed) {
  p.resize(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  Rng r(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    int64_t j = (int64_t)r.below((uint64_t)i + 1);
    int64_t t = p[i]; p[i] = p[j]; p[j] = t;
  }
}

}  // namespace abacus
