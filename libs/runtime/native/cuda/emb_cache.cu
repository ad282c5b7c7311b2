// Embedding rows offloaded to host memory: the tables and their sparse optimizer state stay in the
// host mirror's arrays (registered with CUDA and mapped), and the device holds a cache of crows rows.
// The kernels read and update cache slots (Layout::map gives a table row's slot); before each
// training step and each forward pass, cache_fill makes the rows it reads resident, all on the
// device, on the fill stream: a walk over the batch's ids stamps the slots of the rows already cached
// and claims each row not cached once (-2 in the map); the claimed rows (the misses) are sorted; a
// clock over the slots (CLOCK, second chance: a slot used since the hand last passed it is kept
// while there are others) picks as many victims among the slots no batch in flight reads; the host's
// threads gather the missed rows from host memory into pinned memory (a row whose optimizer state is
// still the initial one: its weights only) and the fill's stream copies them in chunk by chunk while
// the next chunk is gathered; one kernel stages each victim's row for its write-back and puts the new
// row in its place, another updates the map. The staged rows are copied back in one transfer and
// written to host memory by the host's threads at the start of the next fill (or flush), before any
// row is read from it. The host reads back the counts (misses, hits, write-backs) and the sorted
// misses.
// A training step's fill for the next batch runs while the step runs: its victims exclude the
// running step's rows, and its writes wait for the step before (which may have updated a victim).
// Every update a row receives is the one it would receive with the table on the device. A cache that
// holds every row keeps each row at its own index, so the sort keys, sums and numbers are those of
// the device table; with fewer slots the misses take slots in row order, the same on every run.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "cuda_impl.cuh"

namespace abacus {

namespace {
const Tensor* find_t(std::vector<Tensor>& ts, const std::string& name) {
  for (auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

constexpr uint32_t kFreeSlot = 0xffffffffu;

// the part that x falls in: the last p with b[p] <= x (b: P + 1 ascending bounds; an empty part's
// bound equals the next one's, so x lands in the non-empty part that holds it)
__device__ __forceinline__ int part_of(const int64_t* __restrict__ b, int P, int64_t x) {
  int lo = 0, hi = P - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (b[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// the batch's ids (with several parts, counted by part too): a row cached has its slot stamped with the fill's tick (hits counted once per
// slot), a row not cached is claimed by the first thread that swaps its map entry from -1 to -2 and
// listed once among the misses; switched-off slots read no rows
__global__ void cache_walk(k::DevData d, k::Layout L, const int64_t* __restrict__ order, int64_t b0, int64_t B,
                           int maxbag, int32_t tick, int32_t* map, int32_t* stick, uint32_t* miss, int32_t* cnt, int P,
                           const int64_t* __restrict__ prow, int32_t* pcnt, bool block_counts) {
  // several parts: counted in the block's shared memory first when they fit (one global add a part
  // and block, not one an id)
  extern __shared__ int32_t bcnt[];
  int32_t* pc = block_counts ? bcnt : pcnt;
  if (block_counts) {
    for (int i = threadIdx.x; i < 2 * P; i += blockDim.x) bcnt[i] = 0;
    __syncthreads();
  }
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int hit = 0;
  if (t < B * L.S * maxbag) {
    const int64_t bag = t / maxbag;
    const int kk = (int)(t - bag * maxbag);
    const int64_t r = bag / L.S;
    const int s = (int)(bag - r * L.S);
    if (!L.off[L.N + s]) {
      const int64_t src = k::row_of(order, nullptr, b0, r);
      const int64_t* o = d.offs + (int64_t)s * (d.n + 1);
      const int64_t p = o[src] + kk;
      if (p < o[src + 1]) {
        const int32_t id = d.ids[p];
        if (id >= 0) {
          const int64_t row = L.base[s] + id;
          const int32_t sl = map[row];
          if (sl >= 0) {
            hit = atomicExch(&stick[sl], tick) != tick;
            if (P > 1 && hit) atomicAdd(&pc[2 * part_of(prow, P, row) + 1], 1);
          } else if (sl == -1 && atomicCAS(&map[row], -1, -2) == -1) {
            miss[atomicAdd(&cnt[0], 1)] = (uint32_t)row;
            if (P > 1) atomicAdd(&pc[2 * part_of(prow, P, row)], 1);
          }
        }
      }
    }
  }
  const int h = __syncthreads_count(hit);
  if (threadIdx.x == 0 && h) atomicAdd(&cnt[1], h);
  if (block_counts)
    for (int i = threadIdx.x; i < 2 * P; i += blockDim.x)
      if (bcnt[i]) atomicAdd(&pcnt[i], bcnt[i]);
}

// a fill that does not go on (its rows are more than the cache holds): its claims withdrawn
__global__ void cache_unclaim(int64_t n, const uint32_t* __restrict__ miss, int32_t* map) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) map[miss[i]] = -1;
}

// the slot at position i of the windows: the parts' windows one after another (woff: their
// prefix), each from its part's hand around its part's slots
struct ClockPos {
  const int32_t* hand;
  const int64_t* woff;
  const int64_t* pc0;
  int P;
  __device__ int32_t operator()(int64_t i) const {
    const int p = P > 1 ? part_of(woff, P, i) : 0;
    const int64_t n = pc0[p + 1] - pc0[p];
    return (int32_t)(pc0[p] + ((int64_t)hand[p] + (i - woff[p])) % n);
  }
};
// a slot no batch in flight reads (its last use before keep_from), and either not used since the
// clock's hand last went by it (second: false; CLOCK's reference bit clear) or used since (true)
struct Evictable {
  const int32_t* stick;
  const int32_t* pass;
  int32_t keep_from;
  bool second;
  __device__ bool operator()(int32_t sl) const {
    const int32_t t = stick[sl];
    return t < keep_from && (t > pass[sl]) == second;
  }
};

// per part, where its slots start in the cold list and in the warm list (both in window order, so
// part after part): first[p] cold, first[P + p] warm
__global__ void cache_split(int P, const int64_t* __restrict__ pc0, const int32_t* __restrict__ cnt,
                            const int32_t* __restrict__ cold, const int32_t* __restrict__ warm, int32_t* first) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P) return;
  for (int k = 0; k < 2; ++k) {
    const int32_t* list = k ? warm : cold;
    int lo = 0, hi = cnt[k];
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if (part_of(pc0, P, list[mid]) < p) lo = mid + 1;
      else hi = mid;
    }
    first[k * P + p] = lo;
  }
}

// miss j's slot: in a direct part its row's own; else the j-th of its part's misses takes its part's
// window's slots not used since the hand last passed them, in clock order, then (too few of those:
// most of the window is hot) the window's other evictable slots in clock order, as CLOCK's hand would
// take them on a second lap after clearing every bit on its first. A part's first miss records how far
// its hand went (a window position; the hand moves in cache_hands): past its last victim when there
// were enough cold slots, else the whole window
__global__ void cache_pick(int64_t m, int P, const uint32_t* __restrict__ rows, const int64_t* __restrict__ prow,
                           const int64_t* __restrict__ pc0, const int64_t* __restrict__ moff,
                           const int64_t* __restrict__ woff, const int32_t* __restrict__ cnt,
                           const int32_t* __restrict__ first, const int32_t* __restrict__ cold,
                           const int32_t* __restrict__ warm, const int32_t* __restrict__ hand, int32_t* far,
                           int32_t* __restrict__ pick) {
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (j >= m) return;
  const int p = P > 1 ? part_of(moff, P, j) : 0;
  const int64_t n = pc0[p + 1] - pc0[p];
  if (n == prow[p + 1] - prow[p]) {
    pick[j] = (int32_t)(pc0[p] + rows[j] - prow[p]);
    return;
  }
  const int64_t k = j - moff[p], mp = moff[p + 1] - moff[p];
  const int64_t c0 = first[p], c = (p + 1 < P ? first[p + 1] : cnt[0]) - c0, w0 = first[P + p];
  pick[j] = k < c ? cold[c0 + k] : warm[w0 + (k - c)];
  if (k == 0)
    far[p] = (int32_t)(c >= mp ? ((int64_t)cold[c0 + mp - 1] - pc0[p] - hand[p] + n) % n : woff[p + 1] - woff[p] - 1);
}

// the hand goes by every window position up to the last victim: a slot it passes (kept or not) has
// its use seen (the reference bit cleared)
__global__ void cache_pass(int64_t W, int P, const int64_t* __restrict__ pc0, const int64_t* __restrict__ woff,
                           const int32_t* hand, const int32_t* __restrict__ far, int32_t tick, int32_t* pass) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= W) return;
  const int p = P > 1 ? part_of(woff, P, i) : 0;
  const int64_t q = i - woff[p], n = pc0[p + 1] - pc0[p];
  if (q > far[p]) return;
  pass[pc0[p] + ((int64_t)hand[p] + q) % n] = tick;
}

// each part with a window: its hand past the last victim
__global__ void cache_hands(int P, const int64_t* __restrict__ pc0, const int64_t* __restrict__ woff,
                            const int32_t* __restrict__ far, int32_t* hand) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P || woff[p + 1] == woff[p]) return;
  const int64_t n = pc0[p + 1] - pc0[p];
  hand[p] = (int32_t)(((int64_t)hand[p] + far[p] + 1) % n);
}

// dimension d of cache slot `slot` written back to table row `old` in host memory (zero-copy writes:
// the flush's), with its optimizer state; dimension 0 also carries the wide weight and its state
__device__ __forceinline__ void write_back(int64_t slot, int64_t old, int D, int d, const float* ct, const float* cm,
                                           const float* cv, const float* cw, const float* cwm, const float* cwv,
                                           float* ht, float* hm, float* hv, float* hw, float* hwm, float* hwv) {
  ht[old * D + d] = ct[slot * D + d];
  hm[old * D + d] = cm[slot * D + d];
  if (cv) hv[old * D + d] = cv[slot * D + d];
  if (d == 0 && cw) {
    hw[old] = cw[slot];
    hwm[old] = cwm[slot];
    if (cwv) hwv[old] = cwv[slot];
  }
}

// a write-back's place among the fill's staged write-backs: miss i's victim slot holds a row
// (-1: a free slot), numbered in any order (each row is written to its own place in host memory)
__global__ void cache_wbpos(int64_t n, const int32_t* __restrict__ victims, const uint32_t* __restrict__ srow,
                            int32_t* wpos, int32_t* wn) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) wpos[i] = srow[victims[i]] != kFreeSlot ? atomicAdd(wn, 1) : -1;
}

// miss i (sorted) into slot victims[i] (or its own row without victims: a cache of every row): the
// slot's old row staged for its write-back (at its place wpos[i]: its weights, then their first
// moments, then their second moments, each of the DW weights; wrow: the row), then the new row copied
// in from the staged rows (gathered on the host, copied in by chunks; see CudaImpl::stage_w for their
// layout): its weights from sg, its state from sx, or state0 (and zero second moments) for a fresh row
__global__ void cache_swap(int64_t n, const uint32_t* __restrict__ rows, const int32_t* __restrict__ victims,
                           const uint32_t* __restrict__ srow, int D, int WW, int XW, const float* __restrict__ sg,
                           const float* __restrict__ sx, float state0, float* ct, float* cm, float* cv, float* cw,
                           float* cwm, float* cwv, const int32_t* __restrict__ wpos, float* __restrict__ wst,
                           uint32_t* __restrict__ wrow) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= n * D) return;
  const int64_t i = t / D;
  const int d = (int)(t - i * D);
  const int64_t nw = rows[i];
  const int64_t slot = victims ? victims[i] : nw;
  const uint32_t o = srow[slot];
  const int DW = cw ? D + 1 : D;  // a state row: first moments of the DW weights, then second moments
  if (o != kFreeSlot) {
    const int32_t p = wpos[i];
    float* w = wst + (int64_t)p * (DW + XW);
    w[d] = ct[slot * D + d];
    w[DW + d] = cm[slot * D + d];
    if (cv) w[2 * DW + d] = cv[slot * D + d];
    if (d == 0) {
      wrow[p] = o;
      if (cw) {
        w[D] = cw[slot];
        w[DW + D] = cwm[slot];
        if (cwv) w[2 * DW + D] = cwv[slot];
      }
    }
  }
  const float* r = sg + i * WW;
  const int32_t xi = __float_as_int(r[WW - 1]);
  const float* x = xi >= 0 ? sx + (int64_t)xi * XW : nullptr;
  ct[slot * D + d] = r[d];
  cm[slot * D + d] = x ? x[d] : state0;
  if (cv) cv[slot * D + d] = x ? x[DW + d] : 0.f;
  if (d == 0 && cw) {
    cw[slot] = r[D];
    cwm[slot] = x ? x[D] : state0;
    if (cwv) cwv[slot] = x ? x[DW + D] : 0.f;
  }
}

// after the swap: the maps, the slots' rows and ticks
__global__ void cache_book(int64_t n, const uint32_t* __restrict__ rows, const int32_t* __restrict__ victims,
                           int32_t tick, int32_t* map, uint32_t* srow, int32_t* stick, int32_t* pass,
                           unsigned long long* wb) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t nw = rows[i];
  const int32_t slot = victims ? victims[i] : (int32_t)nw;
  const uint32_t o = srow[slot];
  if (o != kFreeSlot) {
    map[o] = -1;
    atomicAdd(wb, 1ull);
  }
  map[nw] = slot;
  srow[slot] = nw;
  stick[slot] = tick;
  pass[slot] = -1;  // a row just read in counts as used since the hand went by
}

// every cached row written back to host memory
__global__ void cache_writeback_all(int64_t crows, int D, const float* ct, const float* cm, const float* cv,
                                    const float* cw, const float* cwm, const float* cwv, float* ht, float* hm, float* hv,
                                    float* hw, float* hwm, float* hwv, const uint32_t* srow) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= crows * D) return;
  const int64_t slot = t / D;
  const int d = (int)(t - slot * D);
  const uint32_t o = srow[slot];
  if (o != kFreeSlot) write_back(slot, o, D, d, ct, cm, cv, cw, cwm, cwv, ht, hm, hv, hw, hwm, hwv);
}

// after cache_writeback_all (a kernel of its own: its threads of one slot read the slot's row), every
// row dropped from the cache
__global__ void cache_drop_all(int64_t crows, int32_t* map, uint32_t* srow) {
  const int64_t slot = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (slot >= crows || srow[slot] == kFreeSlot) return;
  map[srow[slot]] = -1;
  srow[slot] = kFreeSlot;
}

}  // namespace

// the device address of a mirror array: the array itself registered and mapped when it is
// page-aligned, else a pinned, mapped copy of it (see OwnCopy)
static float* mapped(CudaImpl& I, float* host, int64_t n, float*& store) {
  store = nullptr;
  if (!host || n <= 0) return nullptr;
  void* dp = nullptr;
  if (reinterpret_cast<uintptr_t>(host) % 4096 == 0) {
    CK(cudaHostRegister(host, (size_t)n * 4, cudaHostRegisterMapped));
    I.registered.push_back(host);
    CK(cudaHostGetDevicePointer(&dp, host, 0));
    store = host;
  } else {
    float* own = nullptr;
    CK(cudaHostAlloc(reinterpret_cast<void**>(&own), (size_t)n * 4, cudaHostAllocMapped));
    std::memcpy(own, host, (size_t)n * 4);
    I.own_copies.push_back({host, own, n});
    CK(cudaHostGetDevicePointer(&dp, own, 0));
    store = own;
  }
  return static_cast<float*>(dp);
}

void CudaImpl::cache_attach(CpuModel& h) {
  if (!cached || h_table) return;
  auto& P = h.params();
  auto& O = h.opt_state();
  fill_pool = &h.pool();
  auto arr = [&](std::vector<Tensor>& ts, const char* name, int64_t n, float*& store) -> float* {
    store = nullptr;
    const Tensor* t = find_t(ts, name);
    if (!t) return nullptr;
    if (t->size != n) throw std::runtime_error(std::string("offloaded tables: ") + name + " has an unexpected size");
    return mapped(*this, t->data, n, store);
  };
  hh_table = find_t(P, "embedding.table") ? find_t(P, "embedding.table")->data : nullptr;
  hh_wtab = wide && find_t(P, "wide.table") ? find_t(P, "wide.table")->data : nullptr;
  h_table = arr(P, "embedding.table", rows * D, s_table);
  h_spm = arr(O, adam ? "sparse.adam.m.embedding" : "sparse.adagrad.acc.embedding", rows * D, s_spm);
  if (adam) h_spv = arr(O, "sparse.adam.v.embedding", rows * D, s_spv);
  if (wide) {
    h_wtab = arr(P, "wide.table", rows, s_wtab);
    h_wspm = arr(O, adam ? "sparse.adam.m.wide" : "sparse.adagrad.acc.wide", rows, s_wspm);
    if (adam) h_wspv = arr(O, "sparse.adam.v.wide", rows, s_wspv);
  }
  if (!h_table || !h_spm || (adam && !h_spv) || (wide && (!h_wtab || !h_wspm || (adam && !h_wspv))))
    throw std::runtime_error("offloaded tables: the host mirror lacks a table or its optimizer state");
}

void CudaImpl::cache_release() {
  if (fs) cudaStreamSynchronize(fs);
  for (void* p : registered) cudaHostUnregister(p);
  registered.clear();
  for (auto& c : own_copies) cudaFreeHost(c.own);
  own_copies.clear();
  h_table = h_spm = h_spv = h_wtab = h_wspm = h_wspv = nullptr;
  s_table = s_spm = s_spv = s_wtab = s_wspm = s_wspv = nullptr;
  hh_table = hh_wtab = nullptr;
  fill_pool = nullptr;
  for (void* p : std::initializer_list<void*>{miss, victims, fcnt, ftmp, slot_row, slot_tick, slot_pass, cache_hand, cache_wb,
                                              dprow, dpoff, dpcnt})
    if (p) cudaFree(p);
  dprow = dpoff = nullptr;
  dpcnt = nullptr;
  for (void* p : std::initializer_list<void*>{hpcnt, hpoff})
    if (p) cudaFreeHost(p);
  hpcnt = nullptr;
  hpoff = nullptr;
  miss = miss_sorted = nullptr;
  victims = nullptr;
  fcnt = nullptr;
  ftmp = nullptr;
  slot_row = nullptr;
  slot_tick = slot_pass = cache_hand = nullptr;
  cache_wb = nullptr;
  miss_cap = victim_cap = 0;
  ftmp_bytes = 0;
  if (stage_h) cudaFreeHost(stage_h);
  if (miss_h) cudaFreeHost(miss_h);
  if (stage_d) cudaFree(stage_d);
  if (wbx_d) cudaFree(wbx_d);
  stage_h = stage_d = nullptr;
  miss_h = nullptr;
  wbx_d = nullptr;
  wb_pending = false;
  stage_cap = 0;
  for (auto& e : fpe)
    if (e) {
      cudaEventDestroy(e);
      e = nullptr;
    }
  for (cudaEvent_t* e : {&fill_done, &st_mark, &st_now, &st_cur})
    if (*e) {
      cudaEventDestroy(*e);
      *e = nullptr;
    }
  if (fs) cudaStreamDestroy(fs);
  fs = nullptr;
}

// the fill stream, its events and counters, made once
static void fill_setup(CudaImpl& I) {
  if (I.fs) return;
  // the fill's kernels are few and short, and the step waits for them: the GPU schedules their
  // blocks before the running step's
  int lo = 0, hi = 0;
  CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  CK(cudaStreamCreateWithPriority(&I.fs, cudaStreamNonBlocking, hi));
  CK(cudaEventCreateWithFlags(&I.fill_done, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&I.st_mark, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&I.st_now, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&I.st_cur, cudaEventDisableTiming));
  I.fcnt = dalloc<int32_t>(2, false);  // the walk's misses and hits; then the windows' cold and warm slots
  I.dpcnt = dalloc<int32_t>(5 * (size_t)I.P + 1, false);
  I.dpoff = dalloc<int64_t>(2 * ((size_t)I.P + 1), false);
  CK(cudaMallocHost(reinterpret_cast<void**>(&I.hpcnt), (3 + 2 * (size_t)I.P) * sizeof(int32_t)));
  CK(cudaMallocHost(reinterpret_cast<void**>(&I.hpoff), 2 * ((size_t)I.P + 1) * sizeof(int64_t)));
}

// device buffers of at least n entries (grown, never shrunk; the fill stream is idle when they are)
template <class T>
static void grow(T*& p, int64_t& cap, int64_t n) {
  if (n <= cap) return;
  if (p) cudaFree(p);
  p = dalloc<T>((size_t)n, false);
  cap = n;
}

static void fill_tmp(CudaImpl& I, size_t bytes) {
  if (bytes <= I.ftmp_bytes) return;
  if (I.ftmp) cudaFree(I.ftmp);
  I.ftmp_bytes = bytes + bytes / 4;
  I.ftmp = dalloc<uint8_t>(I.ftmp_bytes, false);
}

bool CudaImpl::cache_fill(const k::DevData& d, const int64_t* order, int64_t b0, int64_t B, bool must, bool ahead) {
  if (!cached) return true;
  if (!h_table) throw std::runtime_error("offloaded tables: the host store is not attached");
  fill_setup(*this);
  const int32_t tick = ++ctick;
  static const bool prof = std::getenv("ABACUS_CUDA_VERBOSE") != nullptr;
  if (prof && !fpe[0])
    for (auto& e : fpe) CK(cudaEventCreate(&e));
  double ph = prof ? now_s() : 0;
  auto hmark = [&](int k) {
    if (!prof) return;
    const double t = now_s();
    fp_host[k] += t - ph;
    ph = t;
  };
  auto dmark = [&](int k) {
    if (prof) CK(cudaEventRecord(fpe[k], fs));
  };
  // the walk reads the order and the data, written on st: a fill not ahead starts after st's work;
  // one ahead follows the fill before it, which did (the data and order are those of its epoch)
  if (!ahead) {
    CK(cudaEventRecord(st_now, st));
    CK(cudaStreamWaitEvent(fs, st_now, 0));
  }
  const int mb = std::max(1, d.max_bag);
  const int64_t nid = B * S * mb;
  CK(cudaStreamSynchronize(fs));  // the buffers are free (the last fill is done)
  cache_drain();                  // its write-backs in host memory before any row is read from it
  if (2 * nid > miss_cap) {  // the misses and their sorted copy, one allocation
    grow(miss, miss_cap, 2 * nid);
    miss_sorted = miss + nid;
  }
  CK(cudaMemsetAsync(fcnt, 0, 2 * sizeof(int32_t), fs));
  if (P > 1) CK(cudaMemsetAsync(dpcnt, 0, 2 * P * sizeof(int32_t), fs));
  dmark(0);
  if (nid > 0) {
    const bool block_counts = P > 1 && 2 * P * sizeof(int32_t) <= 32768;
    cache_walk<<<blocks_for(nid), 256, block_counts ? 2 * P * sizeof(int32_t) : 0, fs>>>(
        d, layout(), order, b0, B, mb, tick, dmap, slot_tick, miss, fcnt, P, dprow, dpcnt, block_counts);
  }
  CK(cudaGetLastError());
  dmark(1);
  CK(cudaMemcpyAsync(hpcnt, fcnt, 2 * sizeof(int32_t), cudaMemcpyDeviceToHost, fs));
  if (P > 1) CK(cudaMemcpyAsync(hpcnt + 2, dpcnt, 2 * P * sizeof(int32_t), cudaMemcpyDeviceToHost, fs));
  CK(cudaStreamSynchronize(fs));
  hmark(0);
  const int64_t m = hpcnt[0], h = hpcnt[1], seen = m + h;
  // by part: the misses and the rows seen (one part: the batch's)
  std::vector<int64_t> mp(P, m), sp(P, seen);
  if (P > 1)
    for (int p = 0; p < P; ++p) {
      mp[p] = hpcnt[2 + 2 * p];
      sp[p] = mp[p] + hpcnt[3 + 2 * p];
    }
  for (int p = 0; p < P; ++p) {
    if (sp[p] <= pn(p)) continue;
    if (m) cache_unclaim<<<blocks_for(m), 256, 0, fs>>>(m, miss, dmap);
    CK(cudaStreamSynchronize(fs));
    if (!must) return false;
    if (P == 1)
      throw std::runtime_error("offloaded tables: a batch reads " + std::to_string(seen) +
                               " embedding rows, more than the device cache's " + std::to_string(crows) +
                               " (raise ABACUS_HBM_BUDGET_GB or lower the batch size)");
    throw std::runtime_error("offloaded tables: a batch reads " + std::to_string(sp[p]) + " rows of slot " +
                             std::to_string(p) + "'s table, more than its part of the device cache (" +
                             std::to_string(pn(p)) + " rows; raise its load factor or lower the batch size)");
  }
  // ahead, the running step's rows (stamped with the last fill's tick) stay, when the two batches fit
  // together in every part; else the fill waits for the step
  bool overlap = ahead;
  for (int p = 0; p < P; ++p) overlap = overlap && last_seen_p[p] + sp[p] <= pn(p);
  const int32_t keep_from = overlap ? last_tick : tick;
  // the evictions' writes wait for every step that may still update a victim: the step before the
  // running one when ahead (st_mark, recorded at the last fill), else all of st's work (st_cur)
  cudaEvent_t write_after = st_mark;
  if (!overlap) {
    CK(cudaEventRecord(st_cur, st));
    write_after = st_cur;
  }
  if (m == 0) CK(cudaStreamWaitEvent(fs, write_after, 0));
  if (m > 0) {
    int bits = 1;
    while ((int64_t(1) << bits) <= rows) ++bits;
    const int WW = stage_w(), XW = stage_x(), WB = stage_wb();
    if (m > stage_cap) {  // (no write-back is pending in them: the last fill's were drained above)
      if (stage_h) cudaFreeHost(stage_h);
      if (miss_h) cudaFreeHost(miss_h);
      if (stage_d) cudaFree(stage_d);
      if (wbx_d) cudaFree(wbx_d);
      stage_cap = std::max<int64_t>(m + m / 4, 4096);
      CK(cudaMallocHost(reinterpret_cast<void**>(&stage_h), (size_t)stage_cap * (WW + XW + WB) * 4));
      CK(cudaMallocHost(reinterpret_cast<void**>(&miss_h), (size_t)stage_cap * 2 * 4));
      stage_d = dalloc<float>((size_t)stage_cap * (WW + XW + WB), false);
      wbx_d = dalloc<int32_t>((size_t)stage_cap * 2, false);
    }
    float* const xs_h = stage_h + stage_cap * WW;
    float* const xs_d = stage_d + stage_cap * WW;
    float* const wb_d = stage_d + stage_cap * (WW + XW);
    // per part, a window of its clock from its hand, wider than the slots no batch in flight reads
    // that it must hold (at most this fill's hits and, overlapping, the running step's rows are kept
    // besides the misses' victims), so that slots used since the hand last passed them can be kept;
    // none in a direct part (each row has its own slot) or one with no misses
    int64_t* moff = hpoff;
    int64_t* woff = hpoff + P + 1;
    moff[0] = woff[0] = 0;
    bool all_direct = true;
    for (int p = 0; p < P; ++p) {
      all_direct = all_direct && direct(p);
      moff[p + 1] = moff[p] + mp[p];
      const int64_t w = direct(p) || !mp[p] ? 0 : std::min<int64_t>(pn(p), 4 * (sp[p] + (overlap ? last_seen_p[p] : 0)));
      woff[p + 1] = woff[p] + w;
    }
    const int64_t W = woff[P];
    CK(cudaMemcpyAsync(dpoff, hpoff, 2 * (P + 1) * sizeof(int64_t), cudaMemcpyHostToDevice, fs));
    size_t tb = 0, sb = 0;
    CK(cub::DeviceRadixSort::SortKeys(nullptr, tb, miss, miss_sorted, (int)m, 0, bits, fs));
    const int32_t* vic = nullptr;
    int32_t *cold = nullptr, *warm = nullptr, *pick = nullptr;
    auto pos = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0),
                                               ClockPos{cache_hand, dpoff + P + 1, dprow + P + 1, P});
    if (!all_direct) {
      grow(victims, victim_cap, 2 * W + m);
      cold = victims;
      warm = victims + W;
      pick = victims + 2 * W;
      if (W > 0)
        CK(cub::DeviceSelect::If(nullptr, sb, pos, cold, fcnt, W, Evictable{slot_tick, slot_pass, keep_from, false}, fs));
      vic = pick;
    }
    fill_tmp(*this, std::max(tb, sb));
    // the misses sorted (the same slots on every run) and brought to the host; meanwhile the victims
    CK(cub::DeviceRadixSort::SortKeys(ftmp, tb, miss, miss_sorted, (int)m, 0, bits, fs));
    CK(cudaMemcpyAsync(miss_h, miss_sorted, (size_t)m * 4, cudaMemcpyDeviceToHost, fs));
    CK(cudaEventRecord(st_now, fs));  // (reused: st_now is recorded again before it is waited for)
    dmark(2);
    const cudaEvent_t misses_here = st_now;
    if (vic) {
      if (W > 0) {
        size_t b1 = sb, b2 = sb;
        CK(cub::DeviceSelect::If(ftmp, b1, pos, cold, fcnt, W, Evictable{slot_tick, slot_pass, keep_from, false}, fs));
        CK(cub::DeviceSelect::If(ftmp, b2, pos, warm, fcnt + 1, W, Evictable{slot_tick, slot_pass, keep_from, true}, fs));
        cache_split<<<blocks_for(P), 256, 0, fs>>>(P, dprow + P + 1, fcnt, cold, warm, dpcnt + 2 * P);
      }
      cache_pick<<<blocks_for(m), 256, 0, fs>>>(m, P, miss_sorted, dprow, dprow + P + 1, dpoff, dpoff + P + 1, fcnt,
                                                dpcnt + 2 * P, cold, warm, cache_hand, dpcnt + 4 * P, pick);
      if (W > 0) {
        cache_pass<<<blocks_for(W), 256, 0, fs>>>(W, P, dprow + P + 1, dpoff + P + 1, cache_hand, dpcnt + 4 * P, tick,
                                                  slot_pass);
        cache_hands<<<blocks_for(P), 256, 0, fs>>>(P, dprow + P + 1, dpoff + P + 1, dpcnt + 4 * P, cache_hand);
      }
      CK(cudaGetLastError());
    }
    dmark(3);
    // the rows read in, gathered from the host store on the host model's threads into pinned memory
    // (their last write-back, by an earlier fill, is done: that fill's kernels ran before the sort)
    CK(cudaEventSynchronize(misses_here));
    hmark(1);
    // miss i's weights staged, and its state when it is not fresh (at the chunk's next state row)
    const int DW = wide ? D + 1 : D;
    auto gather_rows = [&](int64_t i0, int64_t i1, std::atomic<int64_t>& xnext) {
      constexpr int64_t ahead_rows = 12;  // random rows in host memory: their lines asked for early
      auto want = [&](int64_t i) {
        const int64_t r = miss_h[i];
        __builtin_prefetch(s_table + r * D);
        if (!fresh[r]) {
          __builtin_prefetch(s_spm + r * D);
          if (adam) __builtin_prefetch(s_spv + r * D);
        }
      };
      int64_t nx = 0;  // this range's state rows, reserved together
      for (int64_t i = i0; i < i1; ++i) nx += !fresh[miss_h[i]];
      int64_t x = nx ? xnext.fetch_add(nx, std::memory_order_relaxed) : 0;
      for (int64_t i = i0; i < std::min(i1, i0 + ahead_rows); ++i) want(i);
      for (int64_t i = i0; i < i1; ++i) {
        if (i + ahead_rows < i1) want(i + ahead_rows);
        const int64_t r = miss_h[i];
        float* o = stage_h + i * WW;
        std::memcpy(o, s_table + r * D, (size_t)D * 4);
        if (wide) o[D] = s_wtab[r];
        int32_t xi = -1;
        if (!fresh[r]) {
          xi = (int32_t)x++;
          float* q = xs_h + (int64_t)xi * XW;
          std::memcpy(q, s_spm + r * D, (size_t)D * 4);
          if (wide) q[D] = s_wspm[r];
          if (adam) {
            std::memcpy(q + DW, s_spv + r * D, (size_t)D * 4);
            if (wide) q[DW + D] = s_wspv[r];
          }
        }
        fresh[r] = 0;  // read in: it will have state of its own
        std::memcpy(o + WW - 1, &xi, 4);
      }
    };
    // in chunks, each copied in while the next is gathered: the pool's other threads gather, chunk by
    // chunk; the calling thread (the device's) copies each chunk in as soon as its last part is done
    constexpr int64_t chunk = 8192;
    const int64_t nch = (m + chunk - 1) / chunk;
    std::vector<std::atomic<int64_t>> xnext((size_t)nch);
    std::vector<std::atomic<int>> parts((size_t)nch);
    for (int64_t c = 0; c < nch; ++c) {
      xnext[c].store(c * chunk, std::memory_order_relaxed);
      parts[c].store(0, std::memory_order_relaxed);
    }
    auto copy_in = [&](int64_t c) {
      const int64_t c0 = c * chunk, cn = std::min(m, c0 + chunk) - c0;
      const int64_t xn = xnext[c].load(std::memory_order_acquire) - c0;
      CK(cudaMemcpyAsync(stage_d + c0 * WW, stage_h + c0 * WW, (size_t)cn * WW * 4, cudaMemcpyHostToDevice, fs));
      if (xn)
        CK(cudaMemcpyAsync(xs_d + c0 * XW, xs_h + c0 * XW, (size_t)xn * XW * 4, cudaMemcpyHostToDevice, fs));
    };
    const int G = fill_pool ? std::min<int>(fill_pool->size() - 1, (int)(m / 512)) : 0;  // gathering threads
    if (G >= 1) {
      fill_pool->run([&](int t) {
        if (t == 0) {  // the copier
          for (int64_t c = 0; c < nch; ++c) {
            while (parts[c].load(std::memory_order_acquire) < G) std::this_thread::yield();
            copy_in(c);
          }
          return;
        }
        if (t > G) return;
        for (int64_t c = 0; c < nch; ++c) {
          const int64_t c0 = c * chunk, cn = std::min(m, c0 + chunk) - c0;
          int64_t i0 = 0, i1 = 0;
          ThreadPool::range(cn, t - 1, G, i0, i1);
          gather_rows(c0 + i0, c0 + i1, xnext[c]);
          parts[c].fetch_add(1, std::memory_order_release);
        }
      });
    } else {
      for (int64_t c = 0; c < nch; ++c) {
        gather_rows(c * chunk, std::min(m, (c + 1) * chunk), xnext[c]);
        copy_in(c);
      }
    }
    hmark(2);
    dmark(4);
    // the evictions' writes wait for every step that may still update a victim
    CK(cudaStreamWaitEvent(fs, write_after, 0));
    // the victims' rows staged for their write-backs (copied back and written to host memory by the
    // next fill or flush, cache_drain), then the new rows in
    int32_t* const wpos = wbx_d;
    uint32_t* const wrow = reinterpret_cast<uint32_t*>(wbx_d + stage_cap);
    if (vic) {
      CK(cudaMemsetAsync(dpcnt + 5 * P, 0, sizeof(int32_t), fs));
      cache_wbpos<<<blocks_for(m), 256, 0, fs>>>(m, vic, slot_row, wpos, dpcnt + 5 * P);
    }
    cache_swap<<<blocks_for(m * D), 256, 0, fs>>>(m, miss_sorted, vic, slot_row, D, WW, XW, stage_d, xs_d, state0, table,
                                                   spm, spv, wtab, wspm, wspv, wpos, wb_d, wrow);
    CK(cudaGetLastError());
    cache_book<<<blocks_for(m), 256, 0, fs>>>(m, miss_sorted, vic, tick, dmap, slot_row, slot_tick, slot_pass, cache_wb);
    CK(cudaGetLastError());
    if (vic) {
      CK(cudaMemcpyAsync(hpcnt + 2 + 2 * P, dpcnt + 5 * P, sizeof(int32_t), cudaMemcpyDeviceToHost, fs));
      wb_pending = true;
    }
    dmark(5);
    if (prof) {
      CK(cudaEventSynchronize(fpe[5]));
      for (int k = 0; k < 5; ++k) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, fpe[k], fpe[k + 1]));
        fp_dev[k] += ms;
      }
      fp_n++;
    }
  }
  hmark(3);
  CK(cudaEventRecord(st_mark, st));  // the next fill's "step before" (st's work up to the step of this one)
  CK(cudaEventRecord(fill_done, fs));
  CK(cudaStreamWaitEvent(st, fill_done, 0));  // the next work on st (the batch's step or pass) reads the rows
  cache_loads += m;
  cache_hits += h;
  last_tick = tick;
  last_seen_p = sp;
  return true;
}

std::string CudaImpl::cache_profile_take() {
  if (!fp_n) return "";
  char b[400];
  const double n = (double)fp_n;
  snprintf(b, sizeof b,
           "; fills (%lld with rows to read in), ms a fill: host walk+counts %.3f, misses back %.3f, gather %.3f, rest %.3f; "
           "device walk %.3f, sort+copy %.3f, victims %.3f, rows in %.3f, swap %.3f",
           (long long)fp_n, fp_host[0] / n * 1e3, fp_host[1] / n * 1e3, fp_host[2] / n * 1e3, fp_host[3] / n * 1e3,
           fp_dev[0] / n, fp_dev[1] / n, fp_dev[2] / n, fp_dev[3] / n, fp_dev[4] / n);
  for (auto& x : fp_host) x = 0;
  for (auto& x : fp_dev) x = 0;
  fp_n = 0;
  return b;
}

// the last fill's staged write-backs copied back and written to the store's rows on the host
// model's threads (the fill stream is idle: each caller synchronised it)
void CudaImpl::cache_drain() {
  if (!wb_pending) return;
  wb_pending = false;
  const int64_t c = hpcnt[2 + 2 * P];
  if (c <= 0) return;
  const int WW = stage_w(), XW = stage_x(), WB = stage_wb(), DW = wide ? D + 1 : D;
  float* const wb_h = stage_h + stage_cap * (WW + XW);
  uint32_t* const wrow_h = miss_h + stage_cap;
  CK(cudaMemcpyAsync(wb_h, stage_d + stage_cap * (WW + XW), (size_t)c * WB * 4, cudaMemcpyDeviceToHost, fs));
  CK(cudaMemcpyAsync(wrow_h, wbx_d + stage_cap, (size_t)c * 4, cudaMemcpyDeviceToHost, fs));
  CK(cudaStreamSynchronize(fs));
  auto scatter = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = wrow_h[i];
      const float* w = wb_h + i * WB;
      std::memcpy(s_table + r * D, w, (size_t)D * 4);
      std::memcpy(s_spm + r * D, w + DW, (size_t)D * 4);
      if (adam) std::memcpy(s_spv + r * D, w + 2 * DW, (size_t)D * 4);
      if (wide) {
        s_wtab[r] = w[D];
        s_wspm[r] = w[DW + D];
        if (adam) s_wspv[r] = w[2 * DW + D];
      }
    }
  };
  const int T = fill_pool ? std::max(1, std::min<int>(fill_pool->size(), (int)(c / 1024) + 1)) : 1;
  if (T > 1)
    fill_pool->run([&](int t) {
      if (t >= T) return;
      int64_t i0 = 0, i1 = 0;
      ThreadPool::range(c, t, T, i0, i1);
      scatter(i0, i1);
    });
  else
    scatter(0, c);
}

void CudaImpl::cache_flush(bool evict) {
  if (!cached || !h_table) return;
  if (fs) {
    CK(cudaStreamSynchronize(fs));
    cache_drain();
    CK(cudaEventRecord(fill_done, fs));
    CK(cudaStreamWaitEvent(st, fill_done, 0));
  }
  cache_writeback_all<<<blocks_for(crows * D), 256, 0, st>>>(crows, D, table, spm, spv, wtab, wspm, wspv, h_table, h_spm,
                                                              h_spv, h_wtab, h_wspm, h_wspv, slot_row);
  CK(cudaGetLastError());
  if (evict) {
    cache_drop_all<<<blocks_for(crows), 256, 0, st>>>(crows, dmap, slot_row);
    CK(cudaGetLastError());
  }
  CK(cudaStreamSynchronize(st));
  for (auto& c : own_copies) std::memcpy(c.mirror, c.own, (size_t)c.n * 4);
}

// which rows' optimizer state in the store is still the initial one (on the host model's threads)
void CudaImpl::scan_fresh() {
  if (!s_spm) return;
  fresh.assign((size_t)rows, 0);
  auto scan = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      bool f = !wide || (s_wspm[r] == state0 && (!adam || s_wspv[r] == 0.f));
      const float* m = s_spm + r * D;
      const float* v = adam ? s_spv + r * D : nullptr;
      for (int d = 0; f && d < D; ++d) f = m[d] == state0 && (!v || v[d] == 0.f);
      fresh[r] = f;
    }
  };
  const int T = fill_pool ? fill_pool->size() : 1;
  if (T > 1)
    fill_pool->run([&](int t) {
      int64_t r0 = 0, r1 = 0;
      ThreadPool::range(rows, t, T, r0, r1);
      scan(r0, r1);
    });
  else
    scan(0, rows);
}

void CudaImpl::cache_invalidate() {
  if (!cached) return;
  if (fs) CK(cudaStreamSynchronize(fs));
  // the mirror was written and is the truth; every such write follows a flush, which drained the
  // write-backs, so none is pending here
  wb_pending = false;
  CK(cudaStreamSynchronize(st));
  CK(cudaMemsetAsync(dmap, 0xff, (size_t)rows * 4, st));
  CK(cudaMemsetAsync(slot_row, 0xff, (size_t)crows * 4, st));
  CK(cudaMemsetAsync(slot_tick, 0xff, (size_t)crows * 4, st));
  CK(cudaMemsetAsync(slot_pass, 0xff, (size_t)crows * 4, st));
  CK(cudaMemsetAsync(cache_hand, 0, (size_t)P * 4, st));
  last_seen_p.assign((size_t)P, 0);
  CK(cudaStreamSynchronize(st));
  for (auto& c : own_copies) std::memcpy(c.own, c.mirror, (size_t)c.n * 4);
  scan_fresh();
}

bool CudaModel::cache_state(int64_t* out) const {
  const CudaImpl& I = *impl_;
  if (!I.cached) return false;
  unsigned long long wb = 0;
  if (I.fs) CK(cudaStreamSynchronize(I.fs));
  if (I.cache_wb) copy_sync(&wb, I.cache_wb, sizeof wb, cudaMemcpyDeviceToHost);
  out[0] = I.crows;
  out[1] = I.rows;
  out[2] = I.cache_loads;
  out[3] = (int64_t)wb;
  out[4] = I.cache_hits;
  return true;
}

}  // namespace abacus
