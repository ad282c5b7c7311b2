// Data on the GPU. Resident: a dataset is uploaded once and kept (at most 3, recognised by a
// pointer/size key plus a light sample, else a sampled fingerprint); ids are checked against the
// vocabularies and offsets validated at upload. Streamed training (data too large to keep): each
// batch is packed on the host into a pinned stage and copied on a second stream.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <cub/device/device_scan.cuh>

#include "../common/batch_pack.h"
#include "../common/rng.h"
#include "../common/thread_pool.h"
#include "../common/train_split.h"
#include "cuda_impl.cuh"

namespace abacus {

namespace {
uint64_t fp_mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2));
  return splitmix64(x);
}
template <class T>
uint64_t sample_hash(uint64_t h, const T* p, int64_t n) {
  h = fp_mix(h, (uint64_t)(uintptr_t)p);
  h = fp_mix(h, (uint64_t)n);
  if (!p || n <= 0) return h;
  const int64_t step = std::max<int64_t>(1, n / 2048);
  for (int64_t i = 0; i < n; i += step) {
    uint32_t u;
    std::memcpy(&u, p + i, 4);
    h = fp_mix(h, u);
  }
  uint32_t u;
  std::memcpy(&u, p + n - 1, 4);
  return fp_mix(h, u);
}

// Uploads n rows of ds onto the GPU into e, the rows visited in order by each_row(fn), which calls
// fn(part, row of the part) for every row and releases mapped pages behind it. The rows go up a chunk
// at a time through host buffers of kChunk rows: the host never holds a second copy of them (only
// their labels and weights, which predict's host outputs use). nnz: their ids, per slot summed.
template <class EachRow>
void upload_into(DevDataset& e, const DataSource& ds, int64_t n, int64_t nnz, int N, int S, EachRow each_row) {
  const bool hw = ds.has_weights();
  auto dev = [&](size_t bytes) {
    void* p = nullptr;
    CK(cudaMalloc(&p, std::max<size_t>(bytes, 4)));
    e.bufs.push_back(p);
    e.bytes += std::max<size_t>(bytes, 4);
    return p;
  };
  float* d_num = static_cast<float*>(dev((size_t)n * N * 4));
  float* d_lab = static_cast<float*>(dev((size_t)n * 4));
  float* d_wt = hw ? static_cast<float*>(dev((size_t)n * 4)) : nullptr;
  int64_t* d_offs = static_cast<int64_t*>(dev((size_t)S * (n + 1) * 8));
  int32_t* d_ids = static_cast<int32_t*>(dev((size_t)std::max<int64_t>(nnz, 1) * 4));
  constexpr int64_t kChunk = int64_t(1) << 18;
  std::vector<float> lab(n), wt(hw ? n : 0);
  {
    std::vector<float> hnum((size_t)std::min<int64_t>(std::max<int64_t>(n, 1), kChunk) * N);
    int64_t g = 0, at = 0, k = 0;
    each_row([&](const DataPart& p, int64_t r) {
      for (int j = 0; j < N; ++j) hnum[(size_t)k * N + j] = p.numeric[r * p.num_stride + ds.num_map[j]];
      lab[g] = p.labels[r];
      if (hw) wt[g] = p.weights[r];
      ++g;
      if (++k == kChunk) {
        if (N) copy_sync(d_num + (size_t)at * N, hnum.data(), (size_t)k * N * 4, cudaMemcpyHostToDevice);
        at += k;
        k = 0;
      }
    });
    if (k && N) copy_sync(d_num + (size_t)at * N, hnum.data(), (size_t)k * N * 4, cudaMemcpyHostToDevice);
    if (n) copy_sync(d_lab, lab.data(), (size_t)n * 4, cudaMemcpyHostToDevice);
    if (hw && n) copy_sync(d_wt, wt.data(), (size_t)n * 4, cudaMemcpyHostToDevice);
  }
  int64_t pos = 0;
  int max_bag = 0;
  {
    std::vector<int64_t> hoffs;
    std::vector<int32_t> hids;
    hoffs.reserve((size_t)std::min<int64_t>(n + 1, kChunk));
    for (int s = 0; s < S; ++s) {
      int64_t oat = 0, iat = pos, g = 0;
      hoffs.clear();
      hids.clear();
      auto flush_offs = [&] {
        if (hoffs.empty()) return;
        copy_sync(d_offs + (size_t)s * (n + 1) + oat, hoffs.data(), hoffs.size() * 8, cudaMemcpyHostToDevice);
        oat += (int64_t)hoffs.size();
        hoffs.clear();
      };
      auto flush_ids = [&] {
        if (hids.empty()) return;
        copy_sync(d_ids + iat, hids.data(), hids.size() * 4, cudaMemcpyHostToDevice);
        iat += (int64_t)hids.size();
        hids.clear();
      };
      each_row([&](const DataPart& p, int64_t r) {
        const int32_t* o = p.offs[s];
        // the lean predict path skips the addon's per-call offsets scan: checked here, once
        if (o[r + 1] < o[r]) throw std::runtime_error("slot #" + std::to_string(s) + ": offsets decrease at row " + std::to_string(g));
        hoffs.push_back(pos);
        max_bag = std::max(max_bag, o[r + 1] - o[r]);
        for (int32_t q = o[r]; q < o[r + 1]; ++q) hids.push_back(p.ids[s][q]);
        pos += o[r + 1] - o[r];
        ++g;
        if ((int64_t)hoffs.size() == kChunk) flush_offs();
        if ((int64_t)hids.size() >= 4 * kChunk) flush_ids();
      });
      hoffs.push_back(pos);  // offsets[n]
      flush_offs();
      flush_ids();
    }
  }
  e.d.n = n;
  e.d.max_bag = max_bag;
  e.d.num = d_num;
  e.d.lab = d_lab;
  e.d.wt = d_wt;
  e.d.offs = d_offs;
  e.d.ids = d_ids;
  e.host_lab = std::move(lab);
  e.host_wt = std::move(wt);
}
}  // namespace

// The data resident on the GPU (uploaded once, kept while the same host arrays are used).
const DevDataset& resident(CudaImpl& I, const DataSource& ds) {
  // Same host arrays as a cached entry (pointer/size key) -> a light content sample (64 values
  // per array) instead of the full 2048-value fingerprint, so repeated eval calls do no host scan.
  uint64_t pk = 0x51ED270B27E1F1C3ULL, lh = 0;
  {
    for (auto& p : ds.parts) {
      pk = fp_mix(pk, (uint64_t)(uintptr_t)p.numeric);
      pk = fp_mix(pk, (uint64_t)(uintptr_t)p.labels);
      pk = fp_mix(pk, (uint64_t)(uintptr_t)p.weights);
      pk = fp_mix(pk, (uint64_t)p.rows);
      for (size_t s = 0; s < p.offs.size(); ++s) {
        pk = fp_mix(pk, (uint64_t)(uintptr_t)p.offs[s]);
        pk = fp_mix(pk, (uint64_t)(uintptr_t)p.ids[s]);
        pk = fp_mix(pk, (uint64_t)p.offs[s][p.rows]);
      }
    }
    for (int j : ds.num_map) pk = fp_mix(pk, (uint64_t)j);
    auto light = [&] {
      uint64_t h = pk;
      auto smp = [&](const auto* a, int64_t cnt) {
        if (!a || cnt <= 0) return;
        const int64_t stp = std::max<int64_t>(1, cnt / 64);
        for (int64_t i = 0; i < cnt; i += stp) { uint32_t u; std::memcpy(&u, a + i, 4); h = fp_mix(h, u); }
      };
      for (size_t i = 0; i < ds.parts.size(); ++i) {
        const auto& p = ds.parts[i];
        smp(p.numeric, p.rows * p.num_stride);
        smp(p.labels, p.rows);
        smp(p.weights, p.weights ? p.rows : 0);
        for (size_t s = 0; s < p.offs.size(); ++s) smp(p.ids[s], p.offs[s][p.rows]);
        ds.release_part(i);
      }
      return h;
    };
    lh = light();
    for (auto& c : I.cache)
      if (c->pkey == pk && c->light == lh) return *c;
  }
  uint64_t h = 1469598103934665603ULL;
  // sampled reads of mapped shards map most of each (the page cache's pages around each read come
  // along): released behind each part, so fingerprinting maps one shard at a time
  for (size_t i = 0; i < ds.parts.size(); ++i) {
    const auto& p = ds.parts[i];
    h = sample_hash(h, p.numeric, p.rows * p.num_stride);
    h = sample_hash(h, p.labels, p.rows);
    h = sample_hash(h, p.weights, p.weights ? p.rows : 0);
    for (size_t s = 0; s < p.offs.size(); ++s) {
      h = sample_hash(h, p.offs[s], p.rows + 1);
      h = sample_hash(h, p.ids[s], p.offs[s][p.rows]);
    }
    ds.release_part(i);
  }
  for (int j : ds.num_map) h = fp_mix(h, (uint64_t)j);
  for (auto& c : I.cache)
    if (c->fp == h) { c->pkey = pk; c->light = lh; return *c; }
  check_vocab(ds, I.vocab);
  int64_t nnz = 0;
  for (int s = 0; s < I.S; ++s)
    for (auto& p : ds.parts) nnz += p.offs[s][p.rows] - p.offs[s][0];
  auto e = std::make_unique<DevDataset>();
  // the parts in order, each part's pages released behind it
  upload_into(*e, ds, ds.rows, nnz, I.N, I.S, [&](auto&& fn) {
    for (size_t pi = 0; pi < ds.parts.size(); ++pi) {
      const auto& p = ds.parts[pi];
      for (int64_t r = 0; r < p.rows; ++r) fn(p, r);
      ds.release_part(pi);
    }
  });
  e->fp = h;
  e->pkey = pk;
  e->light = lh;
  // at most 3 datasets, or more (up to 16) while they are small: together within the small-data
  // budget (ABACUS_CUDA_RESIDENT_SMALL_MB, default 1024). A prune's permutation estimates read each of
  // ten validation folds in turn: with three kept, every fold was uploaded again each time.
  static const size_t small_budget = [] {
    const char* v = std::getenv("ABACUS_CUDA_RESIDENT_SMALL_MB");
    return (size_t)(v ? std::max(0LL, std::atoll(v)) : 1024LL) << 20;
  }();
  auto held = [&] {
    size_t b = e->bytes;
    for (auto& c : I.cache) b += c->bytes;
    return b;
  };
  bool evicted = false;
  while (!I.cache.empty() && (I.cache.size() >= 16 || (I.cache.size() >= 3 && held() > small_budget))) {
    if (!evicted) {
      CK(cudaStreamSynchronize(I.st));
      for (auto& gph : I.graphs) cudaGraphExecDestroy(gph.exec);
      I.graphs.clear();
      evicted = true;
    }
    I.cache.erase(I.cache.begin());
  }
  I.cache.push_back(std::move(e));
  return *I.cache.back();
}

// ---- streamed training (data not resident on the GPU) ----
// ABACUS_CUDA_STREAM=1 streams always, =0 never; otherwise when the resident copy of the training
// data would take more than half of the free device memory.
bool stream_training(const CudaImpl& I, const DataSource& ds) {
  const char* e = std::getenv("ABACUS_CUDA_STREAM");
  if (e && std::string(e) == "1") return true;
  if (e && std::string(e) == "0") return false;
  int64_t nnz = 0;
  for (auto& p : ds.parts)
    for (int s = 0; s < I.S; ++s) nnz += p.offs[s][p.rows] - p.offs[s][0];
  const double bytes = (double)ds.rows * (I.N + 2) * 4 + (double)I.S * (ds.rows + 1) * 8 + (double)nnz * 4;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) return false;
  return bytes > 0.5 * (double)fr;
}

int64_t streamed_host_bytes(const CudaImpl& I, const DataSource& tr, int64_t val_rows) {
  int64_t nnz = 0;
  for (auto& p : tr.parts)
    for (int s = 0; s < I.S; ++s) nnz += p.offs[s][p.rows] - p.offs[s][0];
  const double words = I.S + I.N + 2 + (tr.rows ? (double)nnz / (double)tr.rows : 0.0);
  const double window = (double)std::min<int64_t>(kWindowRows, tr.rows) * words * 4;
  // three windows (columns: the one being read and two copied ahead; records: two; the same words a
  // row, the slots' offsets or counts, the numeric inputs, label, weight and ids) or, packing from the
  // data's columns, the epoch's order (8 bytes a row); the training and validation row lists (8 bytes
  // a row each), the validation rows' labels (4)
  return (int64_t)std::max(3 * window, 8.0 * (double)tr.rows) + 8 * tr.rows + 12 * val_rows;
}

namespace {
std::mutex g_stream_mu;
std::condition_variable g_stream_cv;
int64_t g_stream_held = 0;
int g_stream_fits = 0;
int64_t stream_budget() {
  const char* e = std::getenv("ABACUS_STREAM_HOST_MB");
  const double mb = e && *e ? std::atof(e) : 3072.0;
  return (int64_t)(std::max(1.0, mb) * 1048576.0);
}
}  // namespace

StreamedHostLease::StreamedHostLease(int64_t b, const std::atomic<bool>& cancel) : bytes(b) {
  const int64_t budget = stream_budget();
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lk(g_stream_mu);
  // one fit always runs; a cancelled one goes on (and stops at its first step)
  while (g_stream_fits > 0 && g_stream_held + bytes > budget && !cancel.load())
    g_stream_cv.wait_for(lk, std::chrono::milliseconds(200));
  g_stream_held += bytes;
  g_stream_fits++;
  waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

StreamedHostLease::~StreamedHostLease() {
  {
    std::lock_guard<std::mutex> lk(g_stream_mu);
    g_stream_held -= bytes;
    g_stream_fits--;
  }
  g_stream_cv.notify_all();
}

int max_bag_of(const DataSource& ds, int S, int64_t* max_row) {
  int mb = 0;
  int64_t mr = 0;
  std::vector<int64_t> acc;
  constexpr int64_t kChunk = 4096;
  for (size_t i = 0; i < ds.parts.size(); ++i) {
    const auto& p = ds.parts[i];
    for (int64_t r0 = 0; r0 < p.rows; r0 += kChunk) {
      const int64_t c = std::min(kChunk, p.rows - r0);
      acc.assign(c, 0);
      for (int s = 0; s < S; ++s) {
        const int32_t* o = p.offs[s] + r0;
        for (int64_t r = 0; r < c; ++r) {
          const int32_t len = o[r + 1] - o[r];
          mb = std::max(mb, len);
          acc[r] += len;
        }
      }
      if (max_row)
        for (int64_t r = 0; r < c; ++r) mr = std::max(mr, acc[r]);
    }
    ds.release_part(i);
  }
  if (max_row) *max_row = mr;
  return mb;
}

// Some rows of src (the validation rows of a streamed training set) gathered onto the GPU as a dataset
// of their own, in src's row order given: through host buffers of a chunk of rows at a time, so the
// host never holds a copy of them (only their labels and weights, which predict's host outputs use).
std::unique_ptr<DevDataset> upload_rows(const DataSource& src, const std::vector<int64_t>& rows, int N, int S) {
  auto e = std::make_unique<DevDataset>();
  const int64_t n = (int64_t)rows.size();
  // the rows as given, located in their parts, the mapped pages released every kReleaseEvery rows
  auto each_row = [&](auto&& fn) {
    for (int64_t r = 0; r < n; ++r) {
      if (src.mapped() && r > 0 && r % kReleaseEvery == 0) src.release();
      int64_t lr;
      const DataPart& p = src.locate(rows[r], lr);
      fn(p, lr);
    }
    if (src.mapped()) src.release();
  };
  int64_t nnz = 0;
  each_row([&](const DataPart& p, int64_t lr) {
    for (int s = 0; s < S; ++s) nnz += std::max(0, p.offs[s][lr + 1] - p.offs[s][lr]);
  });
  upload_into(*e, src, n, nnz, N, S, each_row);
  return e;
}

// The two pinned stages of streamed training and their device buffers (grown, never shrunk).
void CudaImpl::ensure_stages(size_t bytes) {
  if (!cs) CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  for (auto& g : stage) {
    if (!g.copied) {
      CK(cudaEventCreateWithFlags(&g.copied, cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&g.consumed, cudaEventDisableTiming));
    }
    if (g.cap >= bytes) continue;
    CK(cudaStreamSynchronize(st));
    CK(cudaStreamSynchronize(cs));
    for (auto& gr : graphs) cudaGraphExecDestroy(gr.exec);  // graphs read the old stage buffers
    graphs.clear();
    if (g.pin) cudaFreeHost(g.pin);
    if (g.dev) cudaFree(g.dev);
    g.pin = nullptr;
    g.dev = nullptr;
    CK(cudaMallocHost(&g.pin, bytes));
    g.dev = dalloc<uint8_t>(bytes, false);
    g.cap = bytes;
  }
}

void CudaImpl::ensure_raw(size_t raw_bytes, int64_t Bc) {
  for (auto& g : stage) {
    if (g.raw_cap >= raw_bytes) continue;
    CK(cudaStreamSynchronize(st));
    CK(cudaStreamSynchronize(cs));
    if (g.raw) cudaFree(g.raw);
    g.raw = dalloc<uint8_t>(raw_bytes, false);
    g.raw_cap = raw_bytes;
  }
  const int64_t cells = (int64_t)S * (Bc + 1);
  if (cells > cnt_cap) {
    CK(cudaStreamSynchronize(st));
    if (d_cnt) cudaFree(d_cnt);
    if (scan_tmp) cudaFree(scan_tmp);
    d_cnt = dalloc<int64_t>(std::max<int64_t>(cells, 1), false);
    cnt_cap = cells;
    scan_tmp = nullptr;
    scan_tmp_bytes = 0;
    CK(cub::DeviceScan::ExclusiveSum(nullptr, scan_tmp_bytes, d_cnt, d_cnt, (int)std::max<int64_t>(cells, 1)));
    scan_tmp = dalloc<uint8_t>(std::max<size_t>(scan_tmp_bytes, 1), false);
  }
}

void CudaImpl::unpack_stage(int slot, int64_t B, const StageLayout& SL, const int64_t* idx, const int32_t* w, bool hw) {
  const auto& g = stage[slot];
  float* num = reinterpret_cast<float*>(g.dev + SL.num);
  float* lab = reinterpret_cast<float*>(g.dev + SL.lab);
  float* wt = hw ? reinterpret_cast<float*>(g.dev + SL.wt) : nullptr;
  int64_t* offs = reinterpret_cast<int64_t*>(g.dev + SL.offs);
  int32_t* ids = reinterpret_cast<int32_t*>(g.dev + SL.ids);
  const int64_t head = S + N + 1 + (hw ? 1 : 0);
  k::unpack_rows<<<blocks_for(B * head), 256, 0, st>>>(idx, w, B, N, S, hw, num, lab, wt, d_cnt);
  if (S == 0) return;
  size_t tb = scan_tmp_bytes;
  CK(cub::DeviceScan::ExclusiveSum(scan_tmp, tb, d_cnt, offs, (int)(S * (B + 1)), st));
  k::unpack_ids<<<blocks_for(B), 256, 0, st>>>(idx, w, B, N, S, hw, offs, ids);
}

void check_vocab(const DataSource& ds, const std::vector<int64_t>& vocab) {
  for (size_t i = 0; i < ds.parts.size(); ++i) {
    const auto& p = ds.parts[i];
    for (size_t s = 0; s < vocab.size(); ++s) {
      const int32_t* o = p.offs[s];
      const int32_t* id = p.ids[s];
      for (int64_t q = o[0]; q < o[p.rows]; ++q)
        if (id[q] >= vocab[s])
          throw std::runtime_error("slot #" + std::to_string(s) + ": id " + std::to_string(id[q]) +
                                   " is outside its vocabulary (" + std::to_string(vocab[s]) + " rows)");
    }
    ds.release_part(i);
  }
}

}  // namespace abacus
