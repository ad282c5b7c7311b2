// Rows of a data source read into memory ahead of training: the rows an epoch will take next (a chunk
// of its order) are read from the mapped shards with pread, span by span, into plain arrays, on a
// thread of their own while the current chunk trains. The trainer then packs batches from memory:
// no page of the shards enters the process's page tables (no page faults on the packing threads, no
// file-backed RSS, nothing to release), and the values read are the same bytes, so training is
// unchanged (same rows, same order, same data).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "data_source.h"
#include "thread_pool.h"

namespace abacus {

// Two requested rows of one part at most this many rows apart are read as one span (the rows
// between are read too): fewer reads where a chunk takes most of a part's blocks.
constexpr int64_t kGatherGapRows = 512;

// A chunk of rows gathered into memory: `ds` is one in-memory part (the spans read, in global row
// order, with the source's numeric layout and num_map), and local[k] is the row of ds that holds the
// k-th requested row.
struct GatheredRows {
  int64_t first = 0;  // position of the chunk's first row in the epoch's order
  std::vector<int64_t> local;
  DataSource ds;
  std::vector<float> num, lab, wt;
  std::vector<int32_t> key;
  std::vector<std::vector<int32_t>> offs, ids;

  struct Span {
    int part;
    int64_t a, b;   // part-local rows [a, b)
    int64_t base;   // local row of a
    int64_t gfirst; // global row of a
  };
  std::vector<Span> spans;
  std::vector<int64_t> sorted;
  std::vector<std::vector<int64_t>> id_base;  // per slot, per span: where its ids start
};

namespace gather_detail {
// Copies bytes at p (inside part `part`'s data) into dst: pread from the shard that holds p, memcpy
// when the source is in memory.
inline void copy_from(const DataSource& src, const void* p, size_t bytes, void* dst) {
  if (bytes == 0) return;
  for (const auto& s : src.keep)
    if (s->contains(p)) { s->read(p, bytes, dst); return; }
  std::memcpy(dst, p, bytes);
}
}  // namespace gather_detail

// Whether gather_rows can read src: its parts share one numeric layout.
inline bool gatherable(const DataSource& src) {
  for (const auto& p : src.parts)
    if (p.num_stride != src.parts.at(0).num_stride) return false;
  return !src.parts.empty();
}

// Reads rows[0..n) of src (global rows; sorted or not, repeats allowed) into g: the first S slots,
// labels, weights and the key where src has them, the numeric rows when `numeric`. Columns are read
// on the pool's threads.
inline void gather_rows(const DataSource& src, const int64_t* rows, int64_t n, int S, bool numeric, ThreadPool& tp, GatheredRows& g) {
  using gather_detail::copy_from;
  g.sorted.assign(rows, rows + n);
  std::sort(g.sorted.begin(), g.sorted.end());
  g.spans.clear();
  int64_t R = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t lr;
    const DataPart& p = src.locate(g.sorted[k], lr);
    const int part = (int)(&p - src.parts.data());
    if (!g.spans.empty() && g.spans.back().part == part && lr < g.spans.back().b) continue;  // a repeat
    if (!g.spans.empty() && g.spans.back().part == part && lr >= g.spans.back().b && lr - g.spans.back().b <= kGatherGapRows) {
      R += lr + 1 - g.spans.back().b;
      g.spans.back().b = lr + 1;
    } else {
      g.spans.push_back({part, lr, lr + 1, R, g.sorted[k]});
      R += 1;
    }
  }
  if (!gatherable(src)) throw std::runtime_error("gather: the parts differ in their numeric layout");
  const int64_t stride = numeric ? src.parts[0].num_stride : 0;
  const bool hw = src.has_weights(), hk = src.has_key();
  g.num.resize(std::max<int64_t>(1, R * stride));
  g.lab.resize(std::max<int64_t>(1, R));
  if (hw) g.wt.resize(std::max<int64_t>(1, R));
  if (hk) g.key.resize(std::max<int64_t>(1, R));
  g.offs.resize(S);
  g.ids.resize(S);
  g.id_base.resize(S);
  const int64_t nsp = (int64_t)g.spans.size();
  const int T = tp.size();
  std::vector<std::exception_ptr> errs(T);
  // numeric / label / weight columns as one more "slot" (index S), each slot on one thread
  tp.run([&](int t) {
    try {
      for (int s = t; s <= S; s += T) {
        if (s == S) {
          for (const auto& sp : g.spans) {
            const DataPart& p = src.parts[sp.part];
            const int64_t m = sp.b - sp.a;
            if (stride) copy_from(src, p.numeric + sp.a * stride, (size_t)(m * stride) * 4, g.num.data() + sp.base * stride);
            copy_from(src, p.labels + sp.a, (size_t)m * 4, g.lab.data() + sp.base);
            if (hw) copy_from(src, p.weights + sp.a, (size_t)m * 4, g.wt.data() + sp.base);
            if (hk) copy_from(src, p.key + sp.a, (size_t)m * 4, g.key.data() + sp.base);
          }
          continue;
        }
        auto& o = g.offs[s];
        auto& base = g.id_base[s];
        o.resize(R + 1);
        base.resize(nsp + 1);
        base[0] = 0;
        int32_t last = 0;
        // the offsets of each span (m + 1 values; the last is overwritten by the next span's first)
        for (int64_t i = 0; i < nsp; ++i) {
          const auto& sp = g.spans[i];
          const DataPart& p = src.parts[sp.part];
          const int64_t m = sp.b - sp.a;
          copy_from(src, p.offs[s] + sp.a, (size_t)m * 4, o.data() + sp.base);
          copy_from(src, p.offs[s] + sp.b, 4, &last);
          base[i + 1] = base[i] + (last - o[sp.base]);
        }
        auto& id = g.ids[s];
        id.resize(std::max<int64_t>(1, base[nsp]));
        for (int64_t i = 0; i < nsp; ++i) {
          const auto& sp = g.spans[i];
          const DataPart& p = src.parts[sp.part];
          const int32_t first = o[sp.base];
          const int64_t cnt = base[i + 1] - base[i];
          copy_from(src, p.ids[s] + first, (size_t)cnt * 4, id.data() + base[i]);
          const int64_t shift = base[i] - first;
          for (int64_t r = sp.base; r < sp.base + (sp.b - sp.a); ++r) o[r] = (int32_t)(o[r] + shift);
        }
        o[R] = (int32_t)base[nsp];
      }
    } catch (...) {
      errs[t] = std::current_exception();
    }
  });
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
  // the local row of each requested row
  g.local.resize(n);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t r = rows[k];
    size_t i = std::upper_bound(g.spans.begin(), g.spans.end(), r, [](int64_t v, const GatheredRows::Span& sp) { return v < sp.gfirst; }) - g.spans.begin() - 1;
    g.local[k] = g.spans[i].base + (r - g.spans[i].gfirst);
  }
  DataPart part;
  part.rows = R;
  part.numeric = g.num.data();
  part.num_stride = stride;
  part.labels = g.lab.data();
  part.weights = hw ? g.wt.data() : nullptr;
  part.key = hk ? g.key.data() : nullptr;
  for (int s = 0; s < S; ++s) {
    part.offs.push_back(g.offs[s].data());
    part.ids.push_back(g.ids[s].data());
  }
  g.ds = DataSource();
  g.ds.parts.push_back(part);
  g.ds.num_map = numeric ? src.num_map : std::vector<int>();
  g.ds.finish();
}

// Gathers an epoch's order chunk by chunk, one chunk ahead: while the trainer packs the batches of
// chunk j, chunk j + 1 is read on a thread of its own. Chunks are whole batches (`chunk` rows, a
// multiple of the batch), so a batch never spans two chunks.
class RowPrefetch {
 public:
  RowPrefetch(const DataSource& src, const int64_t* order, int64_t n, int64_t chunk, int S, ThreadPool& tp)
      : src_(src), order_(order), n_(n), chunk_(chunk), S_(S), tp_(tp) {
    launch(0);
  }
  ~RowPrefetch() {
    if (th_.joinable()) th_.join();
  }
  RowPrefetch(const RowPrefetch&) = delete;
  RowPrefetch& operator=(const RowPrefetch&) = delete;

  // The chunk that holds position b0 of the order (positions are asked for in increasing order).
  // Entering a chunk waits for its read and starts the next one's.
  const GatheredRows& at(int64_t b0) {
    const int64_t j = b0 / chunk_;
    if (j != cur_) {
      if (j != pending_) throw std::logic_error("row prefetch: chunks must be taken in order");
      wait_s_ += join();
      cur_ = j;
      if ((j + 1) * chunk_ < n_) launch(j + 1);
    }
    return buf_[cur_ & 1];
  }
  double wait_seconds() const { return wait_s_; }
  double read_seconds() const { return read_s_; }

 private:
  void launch(int64_t j) {
    pending_ = j;
    GatheredRows& g = buf_[j & 1];
    const int64_t b = j * chunk_, e = std::min(n_, b + chunk_);
    th_ = std::thread([this, &g, b, e] {
      try {
        const auto t0 = std::chrono::steady_clock::now();
        g.first = b;
        gather_rows(src_, order_ + b, e - b, S_, true, tp_, g);
        read_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } catch (...) {
        err_ = std::current_exception();
      }
    });
  }
  double join() {
    const auto t0 = std::chrono::steady_clock::now();
    if (th_.joinable()) th_.join();
    if (err_) { auto e = err_; err_ = nullptr; std::rethrow_exception(e); }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const DataSource& src_;
  const int64_t* order_;
  int64_t n_, chunk_;
  int S_;
  ThreadPool& tp_;
  GatheredRows buf_[2];
  std::thread th_;
  std::exception_ptr err_;
  int64_t cur_ = -1, pending_ = -1;
  double wait_s_ = 0, read_s_ = 0;
};

}  // namespace abacus
