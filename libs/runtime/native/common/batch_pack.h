#pragma once
// Packing the rows of one training batch into one contiguous host buffer (the stage a host-streamed
// CUDA step copies to the device), and the row-major copy of each window of an epoch that lets the
// packers read a row in a few cache lines instead of one miss per column.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <new>
#include <stdexcept>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "data_source.h"
#include "thread_pool.h"
#include "train_split.h"

namespace abacus {

// Where each array of a packed batch of up to Bc rows starts in the stage (256-byte aligned):
// numeric [B x N] floats, labels [B], weights [B] (when the data has them), offsets [S x (B + 1)]
// int64 (slot s's run of ids for row r: ids[offs[s][r] .. offs[s][r + 1])), then the ids of every
// slot, slot after slot.
struct StageLayout {
  size_t num = 0, lab = 0, wt = 0, offs = 0, ids = 0, cap = 0;
};
inline StageLayout stage_layout(int64_t Bc, int N, int S, int mb, bool hw) {
  StageLayout L;
  size_t o = 0;
  auto al = [&](size_t bytes) {
    const size_t r = o;
    o = (o + bytes + 255) & ~size_t(255);
    return r;
  };
  L.num = al((size_t)Bc * N * 4);
  L.lab = al((size_t)Bc * 4);
  L.wt = al(hw ? (size_t)Bc * 4 : 0);
  L.offs = al((size_t)S * (Bc + 1) * 8);
  L.ids = al((size_t)Bc * S * std::max(mb, 1) * 4);
  L.cap = o;
  return L;
}

// Packs rows[0..B) (global rows of ds) into the stage `pin` laid out by L, straight from the data's
// columns; returns the bytes to copy (everything up to the last id). Slots are split across the
// threads, then rows. `base` receives where each slot's ids start (S + 1 entries).
inline size_t pack_rows(ThreadPool& tp, const DataSource& ds, const int64_t* rows, int64_t B, int N, int S,
                        const StageLayout& L, uint8_t* pin, std::vector<int64_t>& base) {
  const bool hw = ds.has_weights();
  float* num = reinterpret_cast<float*>(pin + L.num);
  float* lab = reinterpret_cast<float*>(pin + L.lab);
  float* wt = hw ? reinterpret_cast<float*>(pin + L.wt) : nullptr;
  int64_t* offs = reinterpret_cast<int64_t*>(pin + L.offs);
  int32_t* ids = reinterpret_cast<int32_t*>(pin + L.ids);
  const int T = tp.size();
  base.assign(S + 1, 0);
  tp.run([&](int t) {
    int64_t sb, se;
    ThreadPool::range(S, t, T, sb, se);
    for (int64_t s = sb; s < se; ++s) {
      int64_t c = 0;
      for (int64_t r = 0; r < B; ++r) {
        int64_t lr;
        const DataPart& p = ds.locate(rows[r], lr);
        c += p.offs[s][lr + 1] - p.offs[s][lr];
      }
      base[s + 1] = c;
    }
  });
  for (int s = 0; s < S; ++s) base[s + 1] += base[s];
  tp.run([&](int t) {
    int64_t sb, se;
    ThreadPool::range(S, t, T, sb, se);
    for (int64_t s = sb; s < se; ++s) {
      int64_t pos = base[s];
      int64_t* o = offs + s * (B + 1);
      for (int64_t r = 0; r < B; ++r) {
        int64_t lr;
        const DataPart& p = ds.locate(rows[r], lr);
        o[r] = pos;
        const int32_t* id = p.ids[s];
        for (int32_t q = p.offs[s][lr]; q < p.offs[s][lr + 1]; ++q) ids[pos++] = id[q];
      }
      o[B] = pos;
    }
    int64_t rb, re;
    ThreadPool::range(B, t, T, rb, re);
    for (int64_t r = rb; r < re; ++r) {
      int64_t lr;
      const DataPart& p = ds.locate(rows[r], lr);
      for (int j = 0; j < N; ++j) num[r * N + j] = p.numeric[lr * p.num_stride + ds.num_map[j]];
      lab[r] = p.labels[lr];
      if (hw) wt[r] = p.weights[lr];
    }
  });
  return L.ids + (size_t)base[S] * 4;
}

// One window of rows copied row-major: record k (of the window's rows in stored order) is
// words[off[k] .. off[k + 1]): the count of ids of each slot [S], the numeric inputs [N], the label,
// the weight (when the data has them), then the ids, slot after slot (4-byte words, floats as bits).
// Built from the columns a block of kBlockRows rows at a time, so the reads are sequential within
// each column.
struct WindowRecords {
  std::vector<int64_t> off;
  std::vector<int32_t> words;

  void build(ThreadPool& tp, const DataSource& ds, const int64_t* rows, int64_t m, int N, int S) {
    const bool hw = ds.has_weights();
    const int64_t head = S + N + 1 + (hw ? 1 : 0);
    const int T = tp.size();
    off.resize(m + 1);
    std::vector<int64_t> total(T + 1, 0);
    // sizes, then each thread's share of the words
    tp.run([&](int t) {
      int64_t b, e;
      ThreadPool::range(m, t, T, b, e, kBlockRows);
      const DataPart* P[kBlockRows];
      int64_t lr[kBlockRows];
      int64_t at = 0;
      for (int64_t c0 = b; c0 < e; c0 += kBlockRows) {
        const int64_t c = std::min<int64_t>(kBlockRows, e - c0);
        for (int64_t k = 0; k < c; ++k) P[k] = &ds.locate(rows[c0 + k], lr[k]);
        int64_t size[kBlockRows];
        for (int64_t k = 0; k < c; ++k) size[k] = head;
        for (int s = 0; s < S; ++s) {
          const DataPart* pp = P[0];
          const int32_t* o = pp->offs[s];
          for (int64_t k = 0; k < c; ++k) {
            if (P[k] != pp) {
              pp = P[k];
              o = pp->offs[s];
            }
            size[k] += o[lr[k] + 1] - o[lr[k]];
          }
        }
        for (int64_t k = 0; k < c; ++k) {
          off[c0 + k] = at;
          at += size[k];
        }
      }
      total[t + 1] = at;
    });
    for (int t = 0; t < T; ++t) total[t + 1] += total[t];
    off[m] = total[T];
    if ((int64_t)words.size() < total[T]) words.resize(total[T]);
    tp.run([&](int t) {
      int64_t b, e;
      ThreadPool::range(m, t, T, b, e, kBlockRows);
      const DataPart* P[kBlockRows];
      int64_t lr[kBlockRows], pos[kBlockRows];
      int32_t* w = words.data();
      for (int64_t c0 = b; c0 < e; c0 += kBlockRows) {
        const int64_t c = std::min<int64_t>(kBlockRows, e - c0);
        for (int64_t k = 0; k < c; ++k) {
          P[k] = &ds.locate(rows[c0 + k], lr[k]);
          off[c0 + k] += total[t];
          pos[k] = off[c0 + k] + head;
        }
        for (int64_t k = 0; k < c; ++k) {
          const DataPart& p = *P[k];
          int32_t* rec = w + off[c0 + k];
          for (int j = 0; j < N; ++j) std::memcpy(rec + S + j, p.numeric + lr[k] * p.num_stride + ds.num_map[j], 4);
          std::memcpy(rec + S + N, p.labels + lr[k], 4);
          if (hw) std::memcpy(rec + S + N + 1, p.weights + lr[k], 4);
        }
        for (int s = 0; s < S; ++s) {
          // most blocks lie in one part: its columns' pointers are taken once
          const DataPart* pp = P[0];
          const int32_t* o = pp->offs[s];
          const int32_t* id = pp->ids[s];
          for (int64_t k = 0; k < c; ++k) {
            if (P[k] != pp) {
              pp = P[k];
              o = pp->offs[s];
              id = pp->ids[s];
            }
            const int32_t a = o[lr[k]], z = o[lr[k] + 1];
            int32_t* rec = w + off[c0 + k];
            rec[s] = z - a;
            int32_t* dst = w + pos[k];
            for (int32_t q = a; q < z; ++q) *dst++ = id[q];  // bags are short: no call to memcpy
            pos[k] += z - a;
          }
        }
      }
    });
  }
};

// One window of rows copied column by column, as the CUDA backend holds it on the device for
// host-streamed training: numeric [m x N] row-major in the model's order, labels [m], weights [m]
// (when the data has them), the slots' offsets [S x (m + 1)] int32 into the ids (slot after slot, rows
// in stored order), then the ids. One buffer from `alloc` (pinned host memory, for the device's copy).
// Built from runs of consecutive rows: the columns are copied a run at a time (memcpy where the
// numeric columns are the data's own), so the host does little more than move the window's bytes once.
struct WindowColumns {
  using Alloc = void* (*)(size_t);
  using Free = void (*)(void*);
  Alloc alloc = nullptr;  // malloc / free unless set
  Free dealloc = nullptr;
  uint8_t* mem = nullptr;
  size_t cap = 0;
  int64_t m = 0, nnz = 0;
  size_t num = 0, lab = 0, wt = 0, offs = 0, ids = 0, bytes = 0;  // where each array starts in mem

  WindowColumns() = default;
  WindowColumns(const WindowColumns&) = delete;
  WindowColumns& operator=(const WindowColumns&) = delete;
  ~WindowColumns() { free_mem(); }
  const float* num_p() const { return reinterpret_cast<const float*>(mem + num); }
  const float* lab_p() const { return reinterpret_cast<const float*>(mem + lab); }
  const float* wt_p() const { return reinterpret_cast<const float*>(mem + wt); }
  const int32_t* offs_p() const { return reinterpret_cast<const int32_t*>(mem + offs); }
  const int32_t* ids_p() const { return reinterpret_cast<const int32_t*>(mem + ids); }

  // at least `want` bytes of buffer (what it held is dropped): a window of up to `rows` rows and `ids`
  // ids takes at most window_bytes(rows, ids, ...)
  void reserve(size_t want) {
    if (want <= cap) return;
    free_mem();
    mem = static_cast<uint8_t*>(alloc ? alloc(want) : std::malloc(want));
    if (!mem) throw std::bad_alloc();
    cap = want;
  }
  static size_t window_bytes(int64_t rows, int64_t ids, int N, int S, bool hw) {
    auto al = [](size_t b) { return (b + 255) & ~size_t(255); };
    return al((size_t)rows * N * 4) + al((size_t)rows * 4) + (hw ? al((size_t)rows * 4) : 0) + al((size_t)S * (rows + 1) * 4) +
           al((size_t)ids * 4);
  }

  // f(part, first local row, first window row, rows) for each run of consecutive rows of one part
  // among rows[b, e)
  template <class F>
  static void each_run(const DataSource& ds, const int64_t* rows, int64_t b, int64_t e, F f) {
    for (int64_t i = b; i < e;) {
      int64_t lr;
      const DataPart& p = ds.locate(rows[i], lr);
      int64_t len = 1;
      while (i + len < e && rows[i + len] == rows[i] + len && lr + len < p.rows) ++len;
      f(p, lr, i, len);
      i += len;
    }
  }

  // rows a piece of the copy's work; the threads take pieces as they come free (a thread that waits
  // for a core holds up no one)
  static constexpr int64_t kChunkRows = 16 * kBlockRows;

  void build(ThreadPool& tp, const DataSource& ds, const int64_t* rows, int64_t rows_n, int N, int S) {
    const bool hw = ds.has_weights();
    m = rows_n;
    const int64_t chunks = (m + kChunkRows - 1) / kChunkRows;
    auto each_chunk = [&](auto&& f) {
      std::atomic<int64_t> next{0};
      tp.run([&](int) {
        for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
          f(c, c * kChunkRows, std::min(m, (c + 1) * kChunkRows));
      });
    };
    std::vector<int64_t> at((size_t)chunks * S, 0);  // each chunk's ids of each slot, then where they go
    each_chunk([&](int64_t ch, int64_t b, int64_t e) {
      int64_t* c = at.data() + (size_t)ch * S;
      each_run(ds, rows, b, e, [&](const DataPart& p, int64_t lr, int64_t, int64_t len) {
        for (int s = 0; s < S; ++s) c[s] += p.offs[s][lr + len] - p.offs[s][lr];
      });
    });
    std::vector<int64_t> slot_end(S);
    int64_t total = 0;
    for (int s = 0; s < S; ++s) {
      for (int64_t ch = 0; ch < chunks; ++ch) {
        const int64_t c = at[(size_t)ch * S + s];
        at[(size_t)ch * S + s] = total;
        total += c;
      }
      slot_end[s] = total;
    }
    if (total > INT32_MAX) throw std::runtime_error("a window of training rows holds more than 2^31 ids");
    nnz = total;
    size_t o = 0;
    auto al = [&](size_t b) {
      const size_t r = o;
      o = (o + b + 255) & ~size_t(255);
      return r;
    };
    num = al((size_t)m * N * 4);
    lab = al((size_t)m * 4);
    wt = al(hw ? (size_t)m * 4 : 0);
    offs = al((size_t)S * (m + 1) * 4);
    ids = al((size_t)nnz * 4);
    bytes = o;
    if (bytes > cap) reserve(bytes + bytes / 8);
    float* nm = reinterpret_cast<float*>(mem + num);
    float* lb = reinterpret_cast<float*>(mem + lab);
    float* wg = reinterpret_cast<float*>(mem + wt);
    int32_t* of = reinterpret_cast<int32_t*>(mem + offs);
    int32_t* id = reinterpret_cast<int32_t*>(mem + ids);
    bool ident = true;
    for (int j = 0; j < N; ++j) ident &= j < (int)ds.num_map.size() && ds.num_map[j] == j;
    each_chunk([&](int64_t ch, int64_t b, int64_t e) {
      int64_t* pos = at.data() + (size_t)ch * S;
      each_run(ds, rows, b, e, [&](const DataPart& p, int64_t lr, int64_t i, int64_t len) {
        if (ident && p.num_stride == N) {
          std::memcpy(nm + i * N, p.numeric + lr * N, (size_t)len * N * 4);
        } else {
          for (int64_t q = 0; q < len; ++q)
            for (int j = 0; j < N; ++j) nm[(i + q) * N + j] = p.numeric[(lr + q) * p.num_stride + ds.num_map[j]];
        }
        std::memcpy(lb + i, p.labels + lr, (size_t)len * 4);
        if (hw) std::memcpy(wg + i, p.weights + lr, (size_t)len * 4);
        for (int s = 0; s < S; ++s) {
          const int32_t* so = p.offs[s] + lr;
          const int32_t o0 = so[0];
          int32_t* dst = of + (size_t)s * (m + 1) + i;
          const int32_t shift = (int32_t)pos[s] - o0;
          for (int64_t q = 0; q < len; ++q) dst[q] = so[q] + shift;
          const int64_t cnt = so[len] - o0;
          std::memcpy(id + pos[s], p.ids[s] + o0, (size_t)cnt * 4);
          pos[s] += cnt;
        }
      });
    });
    for (int s = 0; s < S; ++s) of[(size_t)s * (m + 1) + m] = (int32_t)slot_end[s];
  }

 private:
  void free_mem() {
    if (mem) (dealloc ? dealloc(mem) : std::free(mem));
    mem = nullptr;
    cap = 0;
  }
};

// The rows of a batch taken from two windows' columns (where the device holds them: row k of slot w
// at w * stride + k; idx as WindowStream::pack_positions gives it), written in the stage layout: the
// device's gather done on the host, the reference the packers' tests hold the windows to (it must
// give pack_rows' bytes). Returns the bytes of the stage up to the last id.
inline size_t gather_windows(const WindowColumns* const* w, int64_t stride, const int64_t* idx, int64_t B, int N, int S,
                             bool hw, const StageLayout& L, uint8_t* pin) {
  float* num = reinterpret_cast<float*>(pin + L.num);
  float* lab = reinterpret_cast<float*>(pin + L.lab);
  float* wt = hw ? reinterpret_cast<float*>(pin + L.wt) : nullptr;
  int64_t* offs = reinterpret_cast<int64_t*>(pin + L.offs);
  int32_t* ids = reinterpret_cast<int32_t*>(pin + L.ids);
  int64_t at = 0;
  for (int s = 0; s < S; ++s) {
    for (int64_t r = 0; r < B; ++r) {
      const WindowColumns& c = *w[idx[r] / stride];
      const int64_t k = idx[r] % stride;
      const int32_t* o = c.offs_p() + (size_t)s * (c.m + 1);
      offs[s * (B + 1) + r] = at;
      std::memcpy(ids + at, c.ids_p() + o[k], (size_t)(o[k + 1] - o[k]) * 4);
      at += o[k + 1] - o[k];
    }
    offs[s * (B + 1) + B] = at;
  }
  for (int64_t r = 0; r < B; ++r) {
    const WindowColumns& c = *w[idx[r] / stride];
    const int64_t k = idx[r] % stride;
    std::memcpy(num + r * N, c.num_p() + k * N, (size_t)N * 4);
    lab[r] = c.lab_p()[k];
    if (hw) wt[r] = c.wt_p()[k];
  }
  return L.ids + (size_t)at * 4;
}

// Records read this many rows ahead of the one being packed.
constexpr int64_t kAhead = 8;
inline void prefetch_record(const int32_t* rec) {
  for (int l = 0; l < 5; ++l) __builtin_prefetch(rec + 16 * l);  // the first 320 bytes
}

// Packs the rows whose records are recs[0..B) into the stage, exactly as pack_rows packs the same
// rows from the columns (the same bytes); rows are split across the threads.
inline size_t pack_records(ThreadPool& tp, const int32_t* const* recs, int64_t B, int N, int S, bool hw,
                           const StageLayout& L, uint8_t* pin, std::vector<int64_t>& base,
                           std::vector<int64_t>& scratch) {
  float* num = reinterpret_cast<float*>(pin + L.num);
  float* lab = reinterpret_cast<float*>(pin + L.lab);
  float* wt = hw ? reinterpret_cast<float*>(pin + L.wt) : nullptr;
  int64_t* offs = reinterpret_cast<int64_t*>(pin + L.offs);
  int32_t* ids = reinterpret_cast<int32_t*>(pin + L.ids);
  const int T = tp.size();
  const int64_t head = S + N + 1 + (hw ? 1 : 0);
  scratch.assign((size_t)(T + 1) * S, 0);  // ids of each slot in each thread's rows, then where they start
  tp.run([&](int t) {
    int64_t rb, re;
    ThreadPool::range(B, t, T, rb, re);
    int64_t* c = scratch.data() + (size_t)(t + 1) * S;
    for (int64_t r = rb; r < re; ++r) {
      // records are scattered over the window: the next ones are fetched while this one is read
      if (r + kAhead < re) prefetch_record(recs[r + kAhead]);
      const int32_t* rec = recs[r];
      std::memcpy(num + r * N, rec + S, (size_t)N * 4);
      std::memcpy(lab + r, rec + S + N, 4);
      if (hw) std::memcpy(wt + r, rec + S + N + 1, 4);
      for (int s = 0; s < S; ++s) c[s] += rec[s];
    }
  });
  base.assign(S + 1, 0);
  for (int s = 0; s < S; ++s) {
    int64_t at = base[s];
    for (int t = 0; t < T; ++t) {
      const int64_t n = scratch[(size_t)(t + 1) * S + s];
      scratch[(size_t)(t + 1) * S + s] = at;
      at += n;
    }
    base[s + 1] = at;
  }
  tp.run([&](int t) {
    int64_t rb, re;
    ThreadPool::range(B, t, T, rb, re);
    int64_t* pos = scratch.data() + (size_t)(t + 1) * S;
    for (int64_t r = rb; r < re; ++r) {
      if (r + kAhead < re) prefetch_record(recs[r + kAhead]);
      const int32_t* rec = recs[r];
      const int32_t* id = rec + head;
      int64_t* o = offs + r;
      for (int s = 0; s < S; ++s, o += B + 1) {
        *o = pos[s];
        int32_t* dst = ids + pos[s];
        for (int32_t q = 0; q < rec[s]; ++q) dst[q] = id[q];  // bags are short: no call to memcpy
        id += rec[s];
        pos[s] += rec[s];
      }
    }
  });
  for (int s = 0; s < S; ++s) offs[s * (B + 1) + B] = base[s + 1];
  return L.ids + (size_t)base[S] * 4;
}

// A batch's records as they are, for the device to unpack into the stage layout (the CUDA backend's
// host-streamed training from window records): the word offset of each record [B + 1] int64 (the
// first at 0), then the records one after another (RecordStream::pack_raw). The host only copies
// bytes; the transposition into columns, the slots' offsets and ids is the device's (k::unpack_*).
struct RawLayout {
  size_t offs = 0, words = 0, cap = 0;
};
inline RawLayout raw_layout(int64_t Bc, int N, int S, int mb, bool hw) {
  RawLayout L;
  L.offs = 0;
  L.words = ((size_t)(Bc + 1) * 8 + 255) & ~size_t(255);
  const size_t words = (size_t)Bc * (size_t)(S + N + 1 + (hw ? 1 : 0) + (size_t)S * std::max(mb, 1));
  L.cap = L.words + ((words * 4 + 255) & ~size_t(255));
  return L;
}

// The device's unpacking of a raw stage (k::unpack_rows, the scan of the counts, k::unpack_ids) done
// on the host, into the stage layout L: the reference the packers' tests hold the raw path to (it
// must give pack_records' bytes). Returns the bytes of the stage up to the last id.
inline size_t unpack_raw(const uint8_t* raw, const RawLayout& RL, int64_t B, int N, int S, bool hw, const StageLayout& L,
                         uint8_t* pin) {
  const int64_t* roff = reinterpret_cast<const int64_t*>(raw + RL.offs);
  const int32_t* words = reinterpret_cast<const int32_t*>(raw + RL.words);
  float* num = reinterpret_cast<float*>(pin + L.num);
  float* lab = reinterpret_cast<float*>(pin + L.lab);
  float* wt = hw ? reinterpret_cast<float*>(pin + L.wt) : nullptr;
  int64_t* offs = reinterpret_cast<int64_t*>(pin + L.offs);
  int32_t* ids = reinterpret_cast<int32_t*>(pin + L.ids);
  const int64_t head = S + N + 1 + (hw ? 1 : 0);
  std::vector<int64_t> cnt((size_t)S * (B + 1), 0);
  for (int64_t r = 0; r < B; ++r) {
    const int32_t* rec = words + roff[r];
    std::memcpy(num + r * N, rec + S, (size_t)N * 4);
    std::memcpy(lab + r, rec + S + N, 4);
    if (hw) std::memcpy(wt + r, rec + S + N + 1, 4);
    for (int s = 0; s < S; ++s) cnt[(size_t)s * (B + 1) + r] = rec[s];
  }
  int64_t at = 0;
  for (size_t i = 0; i < cnt.size(); ++i) {
    offs[i] = at;
    at += cnt[i];
  }
  for (int64_t r = 0; r < B; ++r) {
    const int32_t* rec = words + roff[r];
    const int32_t* id = rec + head;
    for (int s = 0; s < S; ++s) {
      std::memcpy(ids + offs[(size_t)s * (B + 1) + r], id, (size_t)rec[s] * 4);
      id += rec[s];
    }
  }
  return L.ids + (size_t)at * 4;
}


// The batches of an epoch taken from copies of its windows (WindowedShuffle), row-major records
// (WindowRecords: batches packed on the host or shipped raw) or columns (WindowColumns: held on the
// device, batches named by their rows' places). With `slots` slots (2 or 3) the next slots - 1
// windows (past an epoch's last one, the next epoch's first) are copied ahead, one after another on
// threads of their own, while batches are taken from the current one on others (the two pools
// together should not exceed the cores: a packer or copier that waits for a core holds up its whole
// pool); three slots let a copy run a window further ahead, so a short window (an epoch's last) or a
// slow copy does not hold up the batches. The mapped pages of the data are released behind each copy,
// so at most `slots` windows and one window's pages are held. Positions of an epoch's order are
// addressed as in epoch_order.
template <class Window>
class WindowStream {
 public:
  static constexpr int kMaxSlots = 3;
  WindowStream(const DataSource& ds, const std::vector<int64_t>& rows, bool shuffle, bool windowed, uint64_t seed,
               int epochs, int N, int S, int copy_threads, int pack_threads, int slots = 2)
      : ds_(ds), rows_(rows), shuffle_(shuffle), windowed_(windowed), seed_(seed), epochs_(epochs), N_(N), S_(S),
        nslots_(std::max(2, std::min(kMaxSlots, slots))), pool_(new ThreadPool(std::max(1, copy_threads))),
        pack_pool_(new ThreadPool(std::max(1, pack_threads))) {}
  ~WindowStream() {
    for (auto& s : slot_) join(s, false);
  }
  // Whether batches of B rows can be taken from windows: a batch reads at most two windows (every
  // window but the last holds at least kWindowRows - kBlockRows rows).
  static bool fits(int64_t B) { return B <= kWindowRows - kBlockRows; }
  int slots() const { return nslots_; }

  void start_epoch(int ep) {
    if (!(next_ && next_ep_ == ep)) {
      for (auto& s : slot_) {
        join(s, false);
        s.ep = -1;
      }
      next_ = std::make_shared<const WindowedShuffle>(rows_, shuffle_, windowed_, seed_, ep);
    }
    ep_ = ep;
    ws_ = std::move(next_);
    next_ep_ = -1;
    copy_after(0);
  }
  int64_t windows() const { return ws_->windows(); }
  // seconds spent copying windows in turn (on the copy threads: the copies, build + release, then
  // on_built) and waiting for a copy (on the caller's); the windows' orders (WindowedShuffle::window,
  // made on each copy's thread before its turn); how many windows were copied
  double copy_seconds() const { return copy_s_; }
  double order_seconds() const { return order_s_; }
  double build_seconds() const { return build_s_; }
  int64_t copies() const { return copies_; }
  double wait_seconds() const { return wait_s_; }
  int pack_threads() const { return pack_pool_->size(); }

  // Packs positions [b0, b0 + B) of the epoch's order into the stage (see pack_records).
  size_t pack(int64_t b0, int64_t B, const StageLayout& L, uint8_t* pin, std::vector<int64_t>& base) {
    const int64_t w = locate(b0, B);
    const size_t bytes = pack_records(*pack_pool_, recs_.data(), B, N_, S_, ds_.has_weights(), L, pin, base, scratch_);
    copy_after(w);
    return bytes;
  }
  // The records of positions [b0, b0 + B) as they are, for the device to unpack (see pack_raw):
  // finding each record (its place in the window's shuffle, then its offset: scattered reads) and
  // copying it are both split across the packing threads.
  size_t pack_raw(int64_t b0, int64_t B, const RawLayout& L, uint8_t* pin) {
    const int64_t w = locate(b0, B);
    int64_t* roff = reinterpret_cast<int64_t*>(pin + L.offs);
    int32_t* words = reinterpret_cast<int32_t*>(pin + L.words);
    int64_t at = 0;
    for (int64_t r = 0; r < B; ++r) {
      roff[r] = at;
      at += sizes_[r];
    }
    roff[B] = at;
    const int T = pack_pool_->size();
    pack_pool_->run([&](int t) {
      int64_t rb, re;
      ThreadPool::range(B, t, T, rb, re);
      for (int64_t r = rb; r < re; ++r) {
        if (r + kAhead < re) prefetch_record(recs_[r + kAhead]);
        std::memcpy(words + roff[r], recs_[r], (size_t)sizes_[r] * 4);
      }
    });
    copy_after(w);
    return L.words + (size_t)at * 4;
  }

  // Where the rows of positions [b0, b0 + B) are in the windows as the device holds them (row k of
  // slot w at w * stride + k; set_on_built uploads each window): `batch` numbers the batch
  // (increasing), and each slot remembers the last batch that read it, handed to on_built when the
  // slot is filled again. Returns the slots read (bit w: slot w). With `then_copy` false the next
  // windows' copies (which may refill a slot this batch read) wait for copy_next() (a test reading
  // the host's windows first).
  int pack_positions(int64_t b0, int64_t B, int64_t batch, int64_t stride, int64_t* idx, bool then_copy = true) {
    Seg seg[2];
    const int64_t w = segments(b0, B, batch, seg);
    int mask = 0;
    int64_t r = 0;
    for (const Seg& g : seg) {
      if (!g.s) continue;
      const int k = (int)(g.s - slot_);
      mask |= 1 << k;
      const int64_t* perm = g.s->perm.data() + (b0 - g.wb);
      for (; r < g.r1; ++r) idx[r] = k * stride + perm[r];
    }
    pending_w_ = w;
    if (then_copy) copy_next();
    return mask;
  }
  void copy_next() { copy_after(pending_w_); }

  // Called on a copy thread once a window is built into slot k: with the last batch that read the
  // slot's window before (-1: none), which a device holding the slot's window must have finished
  // with before it is replaced. An exception fails the window's reader.
  using OnBuilt = std::function<void(int k, const Window& win, int64_t last_reader)>;
  // the window held in slot k (what pack_positions' rows point into); set up before the first epoch
  const Window& slot_window(int k) const { return slot_[k].rec; }
  Window& slot_window(int k) { return slot_[k].rec; }
  void set_on_built(OnBuilt f) { on_built_ = std::move(f); }

 private:
  // windows w, w + 1, ... (slots - 1 of them; past the epoch's last, the next epoch's first) are
  // copied while the next batches are taken: w is the window after the last one a batch read
  void copy_after(int64_t w) {
    int e = ep_;
    const WindowedShuffle* ws = ws_.get();
    for (int a = 0; a < nslots_ - 1; ++a, ++w) {
      if (w >= ws->windows()) {
        if (e != ep_ || ep_ + 1 >= epochs_) return;
        if (!next_) {
          next_ = std::make_shared<const WindowedShuffle>(rows_, shuffle_, windowed_, seed_, ep_ + 1);
          next_ep_ = ep_ + 1;
        }
        e = ep_ + 1;
        ws = next_.get();
        w = 0;
      }
      schedule(e, w, e == ep_ ? ws_ : next_);
    }
  }

  struct Slot {
    int ep = -1;
    int64_t w = -1;
    int64_t last_reader = -1;  // the last batch (pack_positions) that read this slot's window
    Window rec;
    std::vector<int64_t> plain, perm;
    std::unique_ptr<std::thread> th;
    std::exception_ptr err;
  };
  // a run of a batch's rows in one window (see segments)
  struct Seg {
    int64_t r1 = 0, wb = 0;
    const Slot* s = nullptr;
  };
  static int64_t key(int ep, int64_t w) { return ep < 0 ? -1 : ((int64_t)ep << 40) + w; }
  // the windows positions [b0, b0 + B) read (at most two), copied: each segment's end (exclusive,
  // in the batch's rows), the first position of its window and its slot; the slots remember `batch`
  // as their last reader (unless negative). Returns the window after the last one read.
  int64_t segments(int64_t b0, int64_t B, int64_t batch, Seg* seg) {
    int nseg = 0;
    const auto& ends = ws_->ends();
    int64_t w = std::upper_bound(ends.begin(), ends.end(), b0) - ends.begin();
    for (int64_t r = 0; r < B; ++w) {
      Slot& s = ready(w);
      if (batch >= 0) s.last_reader = batch;
      const int64_t r1 = std::min(B, ws_->end(w) - b0);
      seg[nseg++] = {r1, ws_->begin(w), &s};
      r = r1;
    }
    return w;
  }
  // f(r, slot, word offset, words) for the record of each position b0 + r, r in [0, B), the rows
  // split across the packing threads (finding a record is two scattered reads: its place in the
  // window's shuffle, then its offset; the offsets of rows ahead are fetched early)
  template <class F>
  void each_record(const Seg* seg, int64_t b0, int64_t B, F f) {
    const int T = pack_pool_->size();
    pack_pool_->run([&](int t) {
      int64_t rb, re;
      ThreadPool::range(B, t, T, rb, re);
      for (int64_t r = rb; r < re; ++r) {
        if (r + kAhead < re) {
          const Seg& h = r + kAhead < seg[0].r1 ? seg[0] : seg[1];
          __builtin_prefetch(h.s->rec.off.data() + h.s->perm[b0 + r + kAhead - h.wb]);
        }
        const Seg& g = r < seg[0].r1 ? seg[0] : seg[1];
        const int64_t k = g.s->perm[b0 + r - g.wb];
        const int64_t o = g.s->rec.off[k];
        f(r, *g.s, o, g.s->rec.off[k + 1] - o);
      }
    });
  }
  // the records (and their sizes) of positions [b0, b0 + B) into recs_ / sizes_; returns the window
  // after the last one they are in
  int64_t locate(int64_t b0, int64_t B) {
    Seg seg[2];
    const int64_t w = segments(b0, B, -1, seg);
    recs_.resize(B);
    sizes_.resize(B);
    each_record(seg, b0, B, [&](int64_t r, const Slot& sl, int64_t o, int64_t n) {
      recs_[r] = sl.rec.words.data() + o;
      sizes_[r] = n;
    });
    return w;
  }
  void join(Slot& s, bool rethrow) {
    if (s.th) {
      s.th->join();
      s.th.reset();
    }
    if (s.err) {
      auto e = s.err;
      s.err = nullptr;
      s.ep = -1;
      if (rethrow) std::rethrow_exception(e);
    }
  }
  Slot* holding(int ep, int64_t w) {
    for (int k = 0; k < nslots_; ++k)
      if (slot_[k].ep == ep && slot_[k].w == w) return &slot_[k];
    return nullptr;
  }
  // window w of epoch ep is copied (or being copied) into a slot whose window is done with (not the
  // one being read, nor one copied ahead of it; the earliest such), on a thread of its own that
  // takes its turn after the copies scheduled before it. Returns the slot (null: none is free).
  Slot* schedule(int ep, int64_t w, const std::shared_ptr<const WindowedShuffle>& ws) {
    if (Slot* h = holding(ep, w)) return h;
    const int64_t now = key(slot_[cur_].ep, slot_[cur_].w);
    Slot* t = nullptr;
    for (int k = 0; k < nslots_; ++k) {
      if (k == cur_) continue;
      const int64_t kk = key(slot_[k].ep, slot_[k].w);
      if (kk >= 0 && kk >= now) continue;  // the window being read or one ahead of it
      if (!t || kk < key(t->ep, t->w)) t = &slot_[k];
    }
    if (!t) return nullptr;
    Slot& s = *t;
    join(s, false);
    s.ep = ep;
    s.w = w;
    const int64_t last_reader = s.last_reader;
    s.last_reader = -1;
    const int64_t ticket = tickets_++;
    s.th.reset(new std::thread([this, &s, w, ws, last_reader, ticket] {
      using clock = std::chrono::steady_clock;
      // the window's order is the slot's own: made while an earlier copy takes its turn
      const auto t0 = clock::now();
      try {
        ws->window(w, s.plain, s.perm);
      } catch (...) {
        s.err = std::current_exception();
      }
      const auto t1 = clock::now();
      {
        std::unique_lock<std::mutex> lk(turn_mu_);
        turn_cv_.wait(lk, [&] { return turn_ == ticket; });
      }
      const auto t1b = clock::now();
      if (!s.err) {
        try {
          s.rec.build(*pool_, ds_, s.plain.data(), (int64_t)s.plain.size(), N_, S_);
          if (ds_.mapped()) ds_.release();
          const auto t2 = clock::now();
          if (on_built_) on_built_((int)(&s - slot_), s.rec, last_reader);
          const auto t3 = clock::now();
          order_s_ += std::chrono::duration<double>(t1 - t0).count();
          copy_s_ += std::chrono::duration<double>(t3 - t1b).count();
          build_s_ += std::chrono::duration<double>(t2 - t1b).count();
          copies_++;
        } catch (...) {
          s.err = std::current_exception();
        }
      }
      {
        std::lock_guard<std::mutex> lk(turn_mu_);
        ++turn_;
      }
      turn_cv_.notify_all();
    }));
    return &s;
  }
  // window w of the current epoch, copied; its slot becomes the one being read
  Slot& ready(int64_t w) {
    Slot* s = holding(ep_, w);
    if (!s) s = schedule(ep_, w, ws_);
    if (!s) throw std::logic_error("window stream: no slot free for the window being read");
    const auto t0 = std::chrono::steady_clock::now();
    join(*s, true);
    wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    cur_ = (int)(s - slot_);
    return *s;
  }

  const DataSource& ds_;
  const std::vector<int64_t>& rows_;
  bool shuffle_, windowed_;
  uint64_t seed_;
  int epochs_, N_, S_;
  int nslots_;
  std::unique_ptr<ThreadPool> pool_, pack_pool_;  // the copies' threads, the packers'
  std::shared_ptr<const WindowedShuffle> ws_, next_;
  int ep_ = 0, next_ep_ = -1;
  Slot slot_[kMaxSlots];
  int cur_ = 0;
  OnBuilt on_built_;
  int64_t pending_w_ = 0;
  std::vector<const int32_t*> recs_;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> scratch_;
  // copies run one at a time, in the order they were scheduled (they share the copy threads)
  std::mutex turn_mu_;
  std::condition_variable turn_cv_;
  int64_t tickets_ = 0, turn_ = 0;
  // written by one copy at a time, read after a join
  double copy_s_ = 0, order_s_ = 0, build_s_ = 0, wait_s_ = 0;
  int64_t copies_ = 0;
};

// windows of records, packed into stages on the host or shipped raw
using RecordStream = WindowStream<WindowRecords>;
// windows of columns, held on the device
using ColumnStream = WindowStream<WindowColumns>;

}  // namespace abacus
