// Embedding rows offloaded to host memory: the tables and their sparse optimizer state stay in the
// host mirror's arrays (registered with CUDA and mapped), and the device holds a cache of crows rows.
// The kernels read and update cache slots (Layout::map gives a table row's slot); before each
// training step and each forward pass, cache_fill makes the rows it reads resident: the host walks the
// batch's ids (it has the data and the epoch's order), assigns a slot to each row not cached (a clock
// over the slots, never one this batch uses), and one kernel on the model's stream writes each evicted
// row back to host memory and reads each new row from it (zero-copy), then updates the slots' map.
// The step that follows on the same stream sees exactly the rows it needs: every update a row
// receives is the one it would receive with the table on the device. A cache that holds every row
// keeps each row at its own index, so the sort keys, sums and numbers are those of the device table.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_impl.cuh"

namespace abacus {

namespace {
const Tensor* find_t(std::vector<Tensor>& ts, const std::string& name) {
  for (auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

// entry i = (slot, old row, new row): the old row (>= 0) written back to host memory (and, with
// evict, dropped from the map), then the new row (>= 0) read into the slot and mapped to it
__global__ void cache_swap(int64_t n, const int64_t* __restrict__ e, int D, bool evict, float* ct, float* cm, float* cv,
                           float* cw, float* cwm, float* cwv, float* ht, float* hm, float* hv, float* hw, float* hwm,
                           float* hwv, int32_t* map) {
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= n * D) return;
  const int64_t i = t / D;
  const int d = (int)(t - i * D);
  const int64_t slot = e[3 * i], old = e[3 * i + 1], nw = e[3 * i + 2];
  if (old >= 0) {
    ht[old * D + d] = ct[slot * D + d];
    hm[old * D + d] = cm[slot * D + d];
    if (cv) hv[old * D + d] = cv[slot * D + d];
    if (d == 0) {
      if (cw) {
        hw[old] = cw[slot];
        hwm[old] = cwm[slot];
        if (cwv) hwv[old] = cwv[slot];
      }
      if (evict) map[old] = -1;
    }
  }
  if (nw >= 0) {
    ct[slot * D + d] = ht[nw * D + d];
    cm[slot * D + d] = hm[nw * D + d];
    if (cv) cv[slot * D + d] = hv[nw * D + d];
    if (d == 0) {
      if (cw) {
        cw[slot] = hw[nw];
        cwm[slot] = hwm[nw];
        if (cwv) cwv[slot] = hwv[nw];
      }
      map[nw] = (int32_t)slot;
    }
  }
}

}  // namespace

// the device address of a mirror array: the array itself registered and mapped when it is
// page-aligned, else a pinned, mapped copy of it (see OwnCopy)
static float* mapped(CudaImpl& I, float* host, int64_t n) {
  if (!host || n <= 0) return nullptr;
  void* dp = nullptr;
  if (reinterpret_cast<uintptr_t>(host) % 4096 == 0) {
    CK(cudaHostRegister(host, (size_t)n * 4, cudaHostRegisterMapped));
    I.registered.push_back(host);
    CK(cudaHostGetDevicePointer(&dp, host, 0));
  } else {
    float* own = nullptr;
    CK(cudaHostAlloc(reinterpret_cast<void**>(&own), (size_t)n * 4, cudaHostAllocMapped));
    std::memcpy(own, host, (size_t)n * 4);
    I.own_copies.push_back({host, own, n});
    CK(cudaHostGetDevicePointer(&dp, own, 0));
  }
  return static_cast<float*>(dp);
}

void CudaImpl::cache_attach(CpuModel& h) {
  if (!cached || h_table) return;
  fill_pool = &h.pool();
  auto& P = h.params();
  auto& O = h.opt_state();
  auto arr = [&](std::vector<Tensor>& ts, const char* name, int64_t n) -> float* {
    const Tensor* t = find_t(ts, name);
    if (!t) return nullptr;
    if (t->size != n) throw std::runtime_error(std::string("offloaded tables: ") + name + " has an unexpected size");
    return mapped(*this, t->data, n);
  };
  hh_table = find_t(P, "embedding.table") ? find_t(P, "embedding.table")->data : nullptr;
  hh_wtab = wide && find_t(P, "wide.table") ? find_t(P, "wide.table")->data : nullptr;
  h_table = arr(P, "embedding.table", rows * D);
  h_spm = arr(O, adam ? "sparse.adam.m.embedding" : "sparse.adagrad.acc.embedding", rows * D);
  if (adam) h_spv = arr(O, "sparse.adam.v.embedding", rows * D);
  if (wide) {
    h_wtab = arr(P, "wide.table", rows);
    h_wspm = arr(O, adam ? "sparse.adam.m.wide" : "sparse.adagrad.acc.wide", rows);
    if (adam) h_wspv = arr(O, "sparse.adam.v.wide", rows);
  }
  if (!h_table || !h_spm || (adam && !h_spv) || (wide && (!h_wtab || !h_wspm || (adam && !h_wspv))))
    throw std::runtime_error("offloaded tables: the host mirror lacks a table or its optimizer state");
}

void CudaImpl::cache_release() {
  for (auto& b : fill_buf) {
    if (b.pin) cudaFreeHost(b.pin);
    if (b.dev) cudaFree(b.dev);
    if (b.done) cudaEventDestroy(b.done);
    b = FillBuf{};
  }
  for (void* p : registered) cudaHostUnregister(p);
  registered.clear();
  for (auto& c : own_copies) cudaFreeHost(c.own);
  own_copies.clear();
  h_table = h_spm = h_spv = h_wtab = h_wspm = h_wspv = nullptr;
  hh_table = hh_wtab = nullptr;
}

static void k_cache_swap(CudaImpl& I, int64_t n, const int64_t* dev_entries, bool evict) {
  cache_swap<<<blocks_for(n * I.D), 256, 0, I.st>>>(n, dev_entries, I.D, evict, I.table, I.spm, I.spv, I.wtab, I.wspm,
                                                    I.wspv, I.h_table, I.h_spm, I.h_spv, I.h_wtab, I.h_wspm, I.h_wspv,
                                                    I.dmap);
  CK(cudaGetLastError());
}

// the entries (slot, old, new) on the device and the swap kernel, on st
static void run_swaps(CudaImpl& I, const std::vector<int64_t>& e, bool evict) {
  const int64_t n = (int64_t)e.size() / 3;
  if (n == 0) return;
  CudaImpl::FillBuf& b = I.fill_buf[I.fill_next];
  I.fill_next = (I.fill_next + 1) % 4;
  if (b.done) CK(cudaEventSynchronize(b.done));  // the fill that last used this buffer has read it
  if ((int64_t)e.size() > b.cap) {
    if (b.pin) cudaFreeHost(b.pin);
    if (b.dev) cudaFree(b.dev);
    b.cap = std::max<int64_t>((int64_t)e.size(), 3 * 4096);
    CK(cudaMallocHost(&b.pin, (size_t)b.cap * 8));
    b.dev = dalloc<int64_t>((size_t)b.cap, false);
  }
  if (!b.done) CK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
  std::memcpy(b.pin, e.data(), e.size() * 8);
  CK(cudaMemcpyAsync(b.dev, b.pin, e.size() * 8, cudaMemcpyHostToDevice, I.st));
  k_cache_swap(I, n, b.dev, evict);
  CK(cudaEventRecord(b.done, I.st));
}

bool CudaImpl::cache_fill(const DataSource& ds, const int64_t* horder, int64_t r0, int64_t B, bool must) {
  if (!cached) return true;
  if (!h_table) throw std::runtime_error("offloaded tables: the host store is not attached");
  const int64_t tick = ++ctick;
  // the rows the batch reads (switched-off slots read none), each once: the batch's rows walked on
  // the host model's threads, a row claimed by the thread that stamps it first with this fill's tick
  const int T = fill_pool ? std::max(1, std::min<int>(fill_pool->size(), (int)(B / 256) + 1)) : 1;
  if ((int)fill_part.size() < T) {
    fill_part.resize(T);
    hits_part.resize(T);
    seen_part.resize(T);
  }
  auto walk = [&](int t) {
    int64_t b = 0, e = B;
    if (T > 1) ThreadPool::range(B, t, T, b, e);
    auto& mine = fill_part[t];
    mine.clear();
    hits_part[t] = 0;
    seen_part[t] = 0;
    for (int64_t r = b; r < e; ++r) {
      const int64_t g = horder ? horder[r] : r0 + r;
      int64_t local = 0;
      const DataPart& p = ds.locate(g, local);
      for (int s = 0; s < S; ++s) {
        if (!up_off.empty() && up_off[N + s]) continue;
        const int32_t* o = p.offs[s];
        const int32_t* ids = p.ids[s];
        for (int64_t q = o[local]; q < o[local + 1]; ++q) {
          const int32_t id = ids[q];
          if (id < 0) continue;
          const int64_t row = hbase[s] + id;
          if (__atomic_load_n(&row_tick[row], __ATOMIC_RELAXED) == tick) continue;
          if (__atomic_exchange_n(&row_tick[row], tick, __ATOMIC_RELAXED) == tick) continue;
          // a row cached already keeps its slot for this batch (each row claimed once: no two
          // threads stamp one slot); the others are this thread's misses
          const int32_t sl = hmap[row];
          if (sl >= 0) {
            slot_tick[sl] = tick;
            hits_part[t]++;
          } else {
            mine.push_back(row);
          }
          ++seen_part[t];
        }
      }
    }
  };
  if (T > 1) fill_pool->run([&](int t) { if (t < T) walk(t); });
  else walk(0);
  fill_rows.clear();  // the misses
  int64_t seen = 0, hits = 0;
  for (int t = 0; t < T; ++t) {
    fill_rows.insert(fill_rows.end(), fill_part[t].begin(), fill_part[t].end());
    seen += seen_part[t];
    hits += hits_part[t];
  }
  if (seen > crows) {
    if (!must) return false;
    throw std::runtime_error("offloaded tables: a batch reads " + std::to_string(seen) +
                             " embedding rows, more than the device cache's " + std::to_string(crows) +
                             " (raise ABACUS_HBM_BUDGET_GB or lower the batch size)");
  }
  // the misses take slots this batch does not use, in row order (whichever thread claimed them: the
  // same slots on every run)
  std::sort(fill_rows.begin(), fill_rows.end());
  cache_hits += hits;
  fill_entries.clear();
  for (const int64_t row : fill_rows) {
    int64_t slot;
    if (crows >= rows) {
      slot = row;  // a cache of every row: each at its own index
    } else {
      while (slot_tick[hand] == tick) hand = (hand + 1) % crows;  // ends: fewer rows than slots are in use
      slot = hand;
      hand = (hand + 1) % crows;
    }
    const int64_t old = slot_row[slot];
    if (old >= 0) {
      hmap[old] = -1;
      cache_writebacks++;
    }
    hmap[row] = (int32_t)slot;
    slot_row[slot] = row;
    slot_tick[slot] = tick;
    cache_loads++;
    fill_entries.push_back(slot);
    fill_entries.push_back(old);
    fill_entries.push_back(row);
  }
  run_swaps(*this, fill_entries, true);
  return true;
}

void CudaImpl::cache_flush(bool evict) {
  if (!cached || !h_table) return;
  std::vector<int64_t> e;
  for (int64_t sl = 0; sl < crows; ++sl)
    if (slot_row[sl] >= 0) {
      e.push_back(sl);
      e.push_back(slot_row[sl]);
      e.push_back(-1);
      if (evict) {
        hmap[slot_row[sl]] = -1;
        slot_row[sl] = -1;
      }
    }
  run_swaps(*this, e, evict);
  CK(cudaStreamSynchronize(st));
  for (auto& c : own_copies) std::memcpy(c.mirror, c.own, (size_t)c.n * 4);
}

void CudaImpl::cache_invalidate() {
  if (!cached) return;
  CK(cudaStreamSynchronize(st));
  std::fill(hmap.begin(), hmap.end(), -1);
  std::fill(slot_row.begin(), slot_row.end(), -1);
  std::fill(slot_tick.begin(), slot_tick.end(), -1);
  hand = 0;
  CK(cudaMemsetAsync(dmap, 0xff, (size_t)rows * 4, st));
  CK(cudaStreamSynchronize(st));
  for (auto& c : own_copies) std::memcpy(c.own, c.mirror, (size_t)c.n * 4);
}

bool CudaModel::cache_state(int64_t* out) const {
  const CudaImpl& I = *impl_;
  if (!I.cached) return false;
  out[0] = I.crows;
  out[1] = I.rows;
  out[2] = I.cache_loads;
  out[3] = I.cache_writebacks;
  out[4] = I.cache_hits;
  return true;
}

}  // namespace abacus
