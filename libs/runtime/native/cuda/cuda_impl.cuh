// Internals of the CUDA model (the public class is in cuda_model.h), shared by its source files:
//   device.cu      cuBLASLt loading, device queries, construction / destruction
//   cuda_model.cu  the host mirror (tensor views, checkpoints, normalisation fit, gradient oracle)
//   residency.cu   data resident on the GPU, streamed training batches
//   gemm.cu        cuBLASLt products (FP32 / TF32, BF16 inputs)
//   forward.cu     workspace, the fused gather + embedding-bag forward, the hidden layers
//   train_step.cu  the training step (one CUDA graph per batch size) and the epoch loop
//   metrics.cu     AUC / logloss / calibration on the GPU
//   predict.cu     predict
//   emb_cache.cu   embedding rows in host memory with a device cache
//   ablation.cu    ablation
//   kernels.cuh / kernels.cu  the CUDA kernels
// nvcc only: the N-API layer (addon_cuda.cc, g++) sees cuda_model.h alone.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../common/batch_pack.h"
#include "../common/data_source.h"
#include "../common/thread_pool.h"
#include "cublaslt_dl.h"
#include "cuda_model.h"
#include "kernels.cuh"

// Shared between the model's source files only: hidden, so they stay out of the addon's dynamic
// symbol table, as they did when they were file-local.
#define ABACUS_CUDA_LOCAL __attribute__((visibility("hidden")))

namespace abacus {

ABACUS_CUDA_LOCAL inline double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
ABACUS_CUDA_LOCAL inline void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}
#define CK(x) ck((x), #x)
// Copies and zero fills that are complete when they return, whichever stream reads the memory next.
// (cudaMemcpy from pageable memory returns before its DMA ends, and cudaMemset is asynchronous; both
// run on the legacy default stream, which the models' non-blocking streams do not wait for: on a busy
// GPU a kernel could read a buffer before it was filled, or have its output zeroed after it.)
ABACUS_CUDA_LOCAL inline void copy_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (!bytes) return;
  CK(cudaMemcpyAsync(dst, src, bytes, kind, cudaStreamPerThread));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
}
ABACUS_CUDA_LOCAL inline void zero_sync(void* p, size_t bytes) {
  if (!bytes) return;
  CK(cudaMemsetAsync(p, 0, bytes, cudaStreamPerThread));
  CK(cudaStreamSynchronize(cudaStreamPerThread));
}
template <class T>
ABACUS_CUDA_LOCAL inline T* dalloc(size_t n, bool zero = true) {
  void* p = nullptr;
  if (n == 0) n = 1;
  CK(cudaMalloc(&p, n * sizeof(T)));
  if (zero) zero_sync(p, n * sizeof(T));
  return static_cast<T*>(p);
}
ABACUS_CUDA_LOCAL inline int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
ABACUS_CUDA_LOCAL inline int blocks_for(int64_t n, int t = 256) { return (int)std::max<int64_t>(1, std::min<int64_t>((n + t - 1) / t, 1 << 30)); }

struct GemmPlan {
  lt::MatmulDesc desc = nullptr;
  lt::MatrixLayout a = nullptr, b = nullptr, c = nullptr;
  lt::MatmulAlgo algo;
  bool ok = false;
};

struct DevDataset {
  k::DevData d;
  std::vector<void*> bufs;
  uint64_t fp = 0;  // fingerprint of the host data it came from
  size_t bytes = 0;  // device memory it holds
  uint64_t pkey = 0, light = 0;  // pointer/size key and light sample (fast path of resident())
  std::vector<float> host_lab, host_wt;  // for predict's host outputs
  ~DevDataset() { for (void* p : bufs) cudaFree(p); }
};

struct CudaImpl {
  int dev = 0;
  cudaStream_t st = nullptr;
  const lt::Api* api = nullptr;
  lt::Handle lt = nullptr;
  void* ws = nullptr;
  size_t ws_bytes = 32u << 20;
  bool tf32 = false, use_epi = true;
  // BF16 evaluation forward (predict, validation, ablation): hidden layers take BF16 inputs and
  // weights with FP32 accumulation, the last hidden layer's output and everything after it FP32.
  // On with TF32 math and at least 2 hidden layers; ABACUS_CUDA_EVAL_PRECISION=tf32 turns it off.
  bool bf16eval = false;
  __nv_bfloat16* H0b = nullptr;
  std::vector<__nv_bfloat16*> Hb, Wb, Bb;  // activations, weights, biases (BF16 output layers)
  bool eval_ctx = false;  // inside predict / ablate (autotune only there: training keeps the heuristic's choice)
  // ABACUS_CUDA_AUTOTUNE=1: time up to 8 cuBLASLt candidates for large eval products (off by default:
  // on an H200 it did not speed up layer 0 and the eval bench was slower with it, 49.6 M vs 57.3 M/s)
  bool autotune = false;
  // config
  int N = 0, S = 0, D = 0, L = 0, in0 = 0, ld0 = 0;
  // First layer's GEMM depth: in0 rounded up to ld0 (429 -> 432 for ctr26) so cuBLASLt can use its
  // 16-byte-aligned TF32 kernels (measured on an H200: 65536 x 429 x 512 0.354 ms, x 432 0.174 ms).
  // On the device W0 has k0 columns, the extra ones zero (H0's padding columns are zero, so their
  // gradients are zero and Adam keeps them zero); the host mirror keeps in0: see dense_copy().
  int k0 = 0;
  int64_t pad0 = 0;  // extra device floats of W0: (k0 - in0) * out_dim[0]
  std::vector<int> in_dim, out_dim;
  std::vector<int64_t> w_off, b_off;
  int64_t wide_num_off = 0, nd = 0, rows = 0;
  bool wide = false, mean = false, adam = false;
  SparseOpt sp;
  std::vector<int64_t> vocab;
  float* pred_buf = nullptr;
  int64_t pred_cap = 0;
  DenseOpt dn;
  // parameters and optimizer state
  float *table = nullptr, *wtab = nullptr, *dense = nullptr, *dm = nullptr, *dv = nullptr, *dg = nullptr;
  float *spm = nullptr, *spv = nullptr, *wspm = nullptr, *wspv = nullptr, *nmean = nullptr, *nstd = nullptr;
  float *G = nullptr, *WG = nullptr;
  int32_t *flag = nullptr, *touched = nullptr;
  int* counter = nullptr;
  int64_t* base = nullptr;
  uint8_t* dfrozen = nullptr;
  uint8_t* doff = nullptr;  // switched-off inputs (N + S flags)
  int64_t *d_step = nullptr, *d_cursor = nullptr, *d_b0 = nullptr;
  int* d_stepidx = nullptr;
  double* d_wsum = nullptr;
  double* d_losses = nullptr;
  int64_t losses_cap = 0;
  // workspace
  int64_t cap = 0;
  float *H0 = nullptr, *logit = nullptr, *dlogit = nullptr, *widev = nullptr, *lab = nullptr, *wt = nullptr;
  float *bagscale = nullptr, *demb = nullptr, *dZa = nullptr, *dZb = nullptr, *zbase = nullptr, *dwide = nullptr;
  float* hpart = nullptr;  // the output layer backward's block sums (head_backward), reduced in block order
  std::vector<float*> H;
  std::vector<uint8_t*> aux;
  void free_bf16_acts() {
    if (H0b) cudaFree(H0b);
    H0b = nullptr;
    for (auto* p : Hb) if (p) cudaFree(p);
    Hb.clear();
  }
  std::vector<int64_t> aux_ld;
  // state of the host mirror
  bool upload_needed = true, host_stale = false;
  // resident datasets (small cache) and the training order
  std::vector<std::unique_ptr<DevDataset>> cache;
  // Streamed training (data not resident): each batch packed on the host into one pinned buffer
  // (numeric, labels, weights, offsets, ids), one host->device copy on the copy stream `cs`,
  // two stages so batch k+1 is packed and copied while the GPU runs step k.
  struct Stage {
    uint8_t* pin = nullptr;
    uint8_t* dev = nullptr;
    size_t cap = 0;
    uint8_t* raw = nullptr;  // the batch's raw records on the device, unpacked into dev (unpack_stage)
    size_t raw_cap = 0;
    cudaEvent_t copied = nullptr, consumed = nullptr;
  };
  Stage stage[2];
  // unpacking raw records on the device: each (slot, row)'s count of ids, and the scan's scratch
  int64_t* d_cnt = nullptr;
  int64_t cnt_cap = 0;
  void* scan_tmp = nullptr;
  size_t scan_tmp_bytes = 0;
  size_t stage_layout_key = 0;  // graphs captured on the stages assume one layout
  cudaStream_t cs = nullptr;
  std::unique_ptr<ThreadPool> pack_pool;
  using StageLayout = abacus::StageLayout;
  StageLayout stage_layout(int64_t Bc, int mb, bool hw) const { return abacus::stage_layout(Bc, N, S, mb, hw); }
  int64_t* d_order = nullptr;
  int64_t order_cap = 0;
  // sort-based sparse backward: (row, position) pairs of one batch, CUB temp storage
  bool sparse_atomic = false;  // ABACUS_CUDA_SPARSE=atomic: the older gradient-table path
  uint32_t *skeys = nullptr, *skeys2 = nullptr;
  int32_t *svals = nullptr, *svals2 = nullptr;
  // per chunk of 32 sorted entries: the gradient of its first row's entries (sparse_chunk_lead)
  float *slead = nullptr, *sleadw = nullptr;
  void* sort_tmp = nullptr;
  size_t sort_tmp_bytes = 0;
  int64_t sort_cap = 0;
  int sort_bits = 1;
  // training steps that ran uncaptured because their capture was invalidated (another thread
  // synchronised the device meanwhile): nothing of the step had run, so it ran eagerly instead
  int64_t capture_fallbacks = 0;
  // captured training steps
  struct Graph { int64_t B; const void* data; const int64_t* order; bool trainable; cudaGraphExec_t exec; };
  std::vector<Graph> graphs;
  std::map<std::string, GemmPlan> plans;
  // ABACUS_CUDA_PROFILE=1: phase times of predict / ablate on stderr (synchronises between phases)
  bool prof = false;
  // normalisation / frozen flags last uploaded: the small uploads happen only when they change
  std::vector<float> up_mean, up_std;
  std::vector<uint8_t> up_frozen, up_off;
  bool small_valid = false;
  // pinned staging of predictions copied back
  float* pin = nullptr;
  int64_t pin_cap = 0;
  // grow-only scratch kept across calls (ablation, segmented metrics): no cudaMalloc / cudaFree /
  // cudaMallocHost per call
  std::map<std::string, std::pair<void*, size_t>> scr;
  void* scratch(const std::string& name, size_t bytes) {
    auto& e = scr[name];
    if (e.second < bytes || !e.first) {
      if (e.first) { cudaStreamSynchronize(st); cudaFree(e.first); }
      e.first = nullptr;
      CK(cudaMalloc(&e.first, std::max<size_t>(bytes, 16)));
      e.second = std::max<size_t>(bytes, 16);
    }
    return e.first;
  }
  // ablation permutations, pinned (grow-only, kept across calls: each configuration's permutation
  // is copied up as soon as it is generated, an asynchronous copy only from pinned memory)
  int32_t* hperm32 = nullptr;
  int64_t hperm_cap = 0;
  std::string prof_detail;
  float* pinned_floats(int64_t n) {
    if (n > pin_cap) {
      if (pin) { cudaStreamSynchronize(st); cudaFreeHost(pin); }
      pin = nullptr;
      CK(cudaMallocHost(&pin, std::max<int64_t>(n, 1) * 4));
      pin_cap = n;
    }
    return pin;
  }

  struct EvalCtx {
    bool& f;
    bool prev;
    explicit EvalCtx(bool& x) : f(x), prev(x) { f = true; }
    ~EvalCtx() { f = prev; }
  };
  k::Layout layout() const { return {N, S, D, ld0, mean, wide, base, doff, cached ? dmap : nullptr}; }

  // ---- embedding rows offloaded to host memory (emb_cache.cu) ----
  // ABACUS_HBM_BUDGET_GB: when the embedding and wide tables with their sparse optimizer state take
  // more device memory than this, they stay in the host mirror's memory (pinned, mapped) and the
  // device holds a cache of crows rows: table / spm / spv / wtab / wspm / wspv are then crows long,
  // indexed by cache slot, and dmap gives each table row's slot. Before each training step and each
  // forward pass the rows it reads are made resident by a fill on the device (cache_fill, on the fill
  // stream fs, which the next work on st waits for); a training step's fill for the next batch runs
  // while the step runs (ahead). A full cache keeps every row at its own index (the same keys, sums
  // and numbers as the table on the device). ABACUS_CUDA_CACHE_ROWS=n: a cache of exactly n rows.
  bool cached = false;
  int64_t crows = 0;
  int32_t* dmap = nullptr;        // table row -> slot (-1: in host memory only; -2: claimed by a fill)
  uint32_t* slot_row = nullptr;   // slot -> table row (kFreeSlot: none)      [crows, device]
  int32_t* slot_tick = nullptr;   // the last fill whose batch reads the slot  [crows, device]
  int32_t* slot_pass = nullptr;   // the fill when the clock's hand last passed the slot (-1: since read in)
  // the cache's parts: part p holds the rows [prow[p], prow[p+1]) (whole tables) in the slots
  // [pc0[p], pc0[p+1]), with a clock of its own; one part over every table (a budget), or one a table
  // (per-table load factors). A part with a slot for each of its rows keeps every row at its own slot
  // (pc0 + row - prow: direct) and never evicts.
  int P = 1;
  std::vector<int64_t> prow_h, pc0_h;    // [P + 1] each, on the host
  int64_t* dprow = nullptr;              // the same on the device: prow, then pc0 [2 (P + 1)]
  int32_t* cache_hand = nullptr;         // each part's clock hand               [P, device]
  int64_t* dpoff = nullptr;              // a fill's prefixes: misses, then window positions, by part [2 (P + 1)]
  int64_t* hpoff = nullptr;              // their pinned host copy
  int32_t* dpcnt = nullptr;              // per part: misses and hits [2P], cold and warm firsts [2P], the hand's next place [P]; write-backs [1]
  int32_t* hpcnt = nullptr;              // the counts' pinned host copy [2 + 2P], the write-backs [1]
  std::vector<int64_t> last_seen_p;      // the rows the last successful fill's batch reads, by part
  int64_t pn(int p) const { return pc0_h[p + 1] - pc0_h[p]; }
  bool direct(int p) const { return pn(p) == prow_h[p + 1] - prow_h[p]; }
  unsigned long long* cache_wb = nullptr;  // rows written back by evictions   [1, device]
  std::vector<int64_t> hbase;     // slot offsets of the table, on the host
  int32_t ctick = 0, last_tick = 0;  // fills so far; the tick of the last fill that succeeded
  // the fill's buffers: the batch's misses (claimed rows) and sorted, the victims' slots, cub space,
  // device counters [misses, hits] (then [cold, warm] slots in the windows)
  uint32_t *miss = nullptr, *miss_sorted = nullptr;  // one allocation: miss_sorted is inside miss
  int32_t* victims = nullptr;
  int32_t* fcnt = nullptr;
  void* ftmp = nullptr;
  size_t ftmp_bytes = 0;
  int64_t miss_cap = 0, victim_cap = 0;
  cudaStream_t fs = nullptr;
  cudaEvent_t fill_done = nullptr, st_mark = nullptr, st_now = nullptr, st_cur = nullptr;
  // the host store: the mirror's arrays, registered with CUDA, and their device addresses
  float *h_table = nullptr, *h_spm = nullptr, *h_spv = nullptr, *h_wtab = nullptr, *h_wspm = nullptr, *h_wspv = nullptr;
  float *hh_table = nullptr, *hh_wtab = nullptr;  // the mirror's table and wide table, host addresses
  // the store's arrays at their host addresses (the mirror's, or its own pinned copies): the fills
  // gather the rows they read in from them on the host model's threads
  float *s_table = nullptr, *s_spm = nullptr, *s_spv = nullptr, *s_wtab = nullptr, *s_wspm = nullptr, *s_wspv = nullptr;
  ThreadPool* fill_pool = nullptr;
  // fresh[row]: the row's optimizer state in the store is the initial one (Adam's zeros, Adagrad's
  // initial accumulator: state0), found by a scan when the store is attached or rewritten and cleared
  // when the row is read in; a fresh row's state is not read from host memory but written as state0
  std::vector<uint8_t> fresh;
  float state0 = 0.f;
  // the rows read in: the sorted misses on the host, the rows gathered (pinned), their device copy.
  // Miss i's weights are at stage + i * stage_w(): [table D][wide (wide)][k], k the index (int bits)
  // of its state among the state rows at stage + stage_cap * stage_w() (-1: a fresh row, whose state
  // is state0 and is not staged); a state row is the first moments of the table's D weights and of the
  // wide weight (wide), then their second moments (Adam). A chunk's state rows start at its first miss.
  uint32_t* miss_h = nullptr;
  float *stage_h = nullptr, *stage_d = nullptr;
  int64_t stage_cap = 0;
  // ABACUS_CUDA_VERBOSE: where the fills' time goes (host: walk and counts, misses back, gather, the
  // rest; device: walk, sort and copy, victims, rows in, swap); the fill then ends before returning
  double fp_host[4] = {0, 0, 0, 0};
  double fp_dev[5] = {0, 0, 0, 0, 0};
  int64_t fp_n = 0;
  cudaEvent_t fpe[6] = {};
  std::string cache_profile_take();
  int stage_w() const { return D + (wide ? 1 : 0) + 1; }
  int stage_x() const { return (D + (wide ? 1 : 0)) * (adam ? 2 : 1); }
  // a staged write-back: the row's weights (D, wide), then its state row; after the state rows in
  // stage_d / stage_h, its table row after the misses in miss_h; on the device, each miss's place
  // among them and their rows in wbx_d [2 stage_cap]; their count in dpcnt[5P] and hpcnt[2 + 2P]
  int stage_wb() const { return D + (wide ? 1 : 0) + stage_x(); }
  int32_t* wbx_d = nullptr;
  bool wb_pending = false;  // the last fill staged write-backs that cache_drain has not written yet
  void cache_drain();
  std::vector<void*> registered;
  // a mirror array not page-aligned (under 2 MiB: malloc'd) is not registered (its pages may be
  // another array's): a pinned copy of it is the store, kept equal to the mirror at attach /
  // invalidate and written back to it by flushes
  struct OwnCopy { float* mirror; float* own; int64_t n; };
  std::vector<OwnCopy> own_copies;
  // what the fills did: rows loaded from host memory, rows a fill found cached (writebacks: cache_wb)
  int64_t cache_loads = 0, cache_hits = 0;
  int64_t trows() const { return cached ? crows : rows; }
  // the host store's arrays (the mirror's), registered and mapped once
  void cache_attach(CpuModel& h);
  // makes the rows that B rows of d read resident (rows order[b0..b0+B), or b0.. without an order);
  // false (nothing changed) when they are more rows than the cache holds, and then with `must` it
  // throws. ahead: the step of the last fill may still run on st (its rows are kept; the fill waits
  // only for the step before it); else the fill follows everything enqueued on st.
  bool cache_fill(const k::DevData& d, const int64_t* order, int64_t b0, int64_t B, bool must, bool ahead = false);
  // every cached row written back to host memory (the mirror is then current); evict: and dropped
  void cache_flush(bool evict);
  // the cache emptied without writing back (the mirror was written: it is the truth)
  void cache_invalidate();
  void scan_fresh();
  void cache_release();

  // rows per forward pass of predict / ablate: at least ABACUS_CUDA_EVAL_BATCH (default 65536),
  // whatever batch the caller named (per-row results do not depend on it)
  int64_t eval_min = 65536;
  int64_t eval_batch(int64_t batch) const { return std::max<int64_t>(std::max<int64_t>(batch, 1), eval_min); }

  // sort path possible for a batch of B rows whose bags hold at most maxbag ids?
  bool sort_path(int64_t B, int maxbag) const {
    return !sparse_atomic && maxbag > 0 && B * S * (int64_t)maxbag < (int64_t(1) << 30) && trows() < (int64_t(1) << 31);
  }

  const float* layer_in(int l) const { return l == 0 ? H0 : H[l - 1]; }
  int64_t ld_in(int l) const { return l == 0 ? ld0 : in_dim[l]; }
  int64_t kdim(int l) const { return l == 0 ? k0 : in_dim[l]; }

  // ---- defined out of line, by concern ----
  // device.cu
  ~CudaImpl();
  // residency.cu: the two pinned stages of streamed training (and their device buffers)
  void ensure_stages(size_t bytes);
  // device buffers for batches shipped as raw records (raw_bytes each stage, up to Bc rows of S slots)
  void ensure_raw(size_t raw_bytes, int64_t Bc);
  // B records (k::unpack_rows: record r at word idx[r] of w) unpacked on st into stage `slot`'s
  // layout SL, byte for byte what the host packer writes (batch_pack.h pack_records)
  void unpack_stage(int slot, int64_t B, const StageLayout& SL, const int64_t* idx, const int32_t* w, bool hw);
  // gemm.cu: col-major cuBLASLt products with an epilogue (false when no algorithm fits; *_must throw)
  bool gemm(int opA, int opB, int64_t m, int64_t n, int64_t kk, const float* A, int64_t lda, const float* B,
            int64_t ldb, float beta, const float* C, int64_t ldc, float* Dp, int64_t ldd, int epi,
            const float* bias = nullptr, void* auxp = nullptr, int64_t auxld = 0);
  void gemm_must(int opA, int opB, int64_t m, int64_t n, int64_t kk, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float beta, const float* C, int64_t ldc, float* Dp, int64_t ldd, int epi,
                 const float* bias = nullptr);
  bool gemm_bf16(int64_t m, int64_t n, int64_t kk, const __nv_bfloat16* A, int64_t lda, const __nv_bfloat16* Bm,
                 int64_t ldb, void* Dp, int64_t ldd, bool d_bf16, int epi, const void* bias, bool run = true);
  void gemm_bf16_f32_must(int64_t m, int64_t n, int64_t kk, const __nv_bfloat16* A, int64_t lda, const __nv_bfloat16* Bm,
                          int64_t ldb, float* Dp, int64_t ldd, int epi, const float* bias);
  // forward.cu: workspace for batches up to B, the fused gather into H0 / H0b, the hidden layers
  // (FP32 / TF32, or BF16 inputs for evaluation) and the BF16 copies of their weights
  void ensure(int64_t B);
  void gather(const k::DevData& d, const int64_t* order, const int64_t* b0p, int64_t b0h, int64_t B, bool keep_scale,
              int outs = 1);
  void mlp_forward(int64_t B, int from, bool train, int to = -1);
  bool bf16_ready(int64_t B);
  void refresh_wb();
  void mlp_forward_bf16(int64_t B, int from, int to = -1);
  // train_step.cu: sparse-backward buffers (before a step is captured), one training step (capturable)
  void prepare_sparse(int64_t B, int maxbag);
  void enqueue_step(const k::DevData& d, const int64_t* order, int64_t B, bool trainable, bool reset_cursor = false);
  // predict.cu: predictions of n rows into pred (device)
  void predict_dev(const k::DevData& d, const int64_t* order, int64_t n, int64_t batch, float* pred, float* labo,
                   float* wto, const std::atomic<bool>* cancel);
};

// Phase timer (ABACUS_CUDA_PROFILE=1): synchronises the stream at each mark, one line on stderr.
struct Prof {
  CudaImpl& I;
  const char* what;
  double t0 = 0, tl = 0;
  std::string line;
  Prof(CudaImpl& i, const char* w) : I(i), what(w) {
    if (I.prof) { cudaStreamSynchronize(I.st); t0 = tl = now_s(); }
  }
  void mark(const char* phase) {
    if (!I.prof) return;
    cudaStreamSynchronize(I.st);
    const double t = now_s();
    char b[128];
    snprintf(b, sizeof b, " %s=%.3f", phase, (t - tl) * 1e3);
    line += b;
    tl = t;
  }
  ~Prof() {
    if (I.prof) fprintf(stderr, "[abacus-cuda] %s ms:%s total=%.3f\n", what, line.c_str(), (now_s() - t0) * 1e3);
  }
};

// ---- the process's CUDA context (device.cu) ----
// The shared cuBLASLt handle of device `dev`: created once per device and process, never destroyed.
// (cublasLtDestroy synchronises the whole device; run from a model's finalizer on the JS thread it
// invalidated the CUDA-graph capture another thread had in progress: cuBLASLt status 13/14 there.)
ABACUS_CUDA_LOCAL lt::Handle shared_lt_handle(const lt::Api* api, int dev);
// Errors after which the CUDA context is unusable for the rest of the process.
ABACUS_CUDA_LOCAL bool cuda_sticky(cudaError_t e);
// Start of every GPU operation of a model: refuses at once when the context was lost, makes the
// model's device current and clears a non-sticky error an earlier operation left on this (pooled) thread.
ABACUS_CUDA_LOCAL void enter(CudaImpl& I);
// In a catch block of a GPU operation: probes the context (the model's own stream only, never a
// device-wide synchronisation) and rethrows; a sticky fault is recorded for the device and its
// message starts with kCudaContextLostTag.
[[noreturn]] ABACUS_CUDA_LOCAL void rethrow_classified(CudaImpl& I);

// ---- provided by one source file to the others ----
// cuda_model.cu: device -> host mirror when the device is newer; host mirror -> device when JS
// may have written it (and the normalisation / frozen flags when they changed)
ABACUS_CUDA_LOCAL void download(CudaImpl& I, CpuModel& h);
ABACUS_CUDA_LOCAL void upload(CudaImpl& I, CpuModel& h, const std::vector<uint8_t>& frozen, const std::vector<uint8_t>& off);
// residency.cu
ABACUS_CUDA_LOCAL const DevDataset& resident(CudaImpl& I, const DataSource& ds);
ABACUS_CUDA_LOCAL void check_vocab(const DataSource& ds, const std::vector<int64_t>& vocab);
ABACUS_CUDA_LOCAL bool stream_training(const CudaImpl& I, const DataSource& ds);
// the longest bag of ids (of one sample and slot); with max_row, the most ids of one row (all slots)
ABACUS_CUDA_LOCAL int max_bag_of(const DataSource& ds, int S, int64_t* max_row = nullptr);
// The host memory a fit streamed from tr holds while it trains (records of two windows, the row lists,
// the validation labels), and a lease on the process-wide budget for it (ABACUS_STREAM_HOST_MB,
// default 3072): a streamed fit waits while the fits already streaming hold more than the budget
// leaves (one always runs), so the worker's memory is bounded by the budget, not by how many fits
// the lanes start at once. The lease ends with the object.
ABACUS_CUDA_LOCAL int64_t streamed_host_bytes(const CudaImpl& I, const DataSource& tr, int64_t val_rows);
struct ABACUS_CUDA_LOCAL StreamedHostLease {
  int64_t bytes = 0;
  double waited_s = 0;
  StreamedHostLease(int64_t bytes, const std::atomic<bool>& cancel);
  ~StreamedHostLease();
  StreamedHostLease(const StreamedHostLease&) = delete;
  StreamedHostLease& operator=(const StreamedHostLease&) = delete;
};
// metrics.cu
ABACUS_CUDA_LOCAL Metrics gpu_metrics(CudaImpl& I, const float* pred, const float* lab, const float* w, int64_t n,
                                      float* tmp_k, float* tmp_y, double* tmp_a, double* tmp_b, double* tmp_c,
                                      float* tmp_keys2);
ABACUS_CUDA_LOCAL void seg_metrics(CudaImpl& I, const float* p, int64_t C, int64_t n, int F, const float* lab,
                                   const float* w, std::vector<Metrics>& whole, std::vector<Metrics>* folds);

// scratch for gpu_metrics over up to n rows
struct MetScratch {
  float *k = nullptr, *y = nullptr, *k2 = nullptr;
  double *a = nullptr, *b = nullptr, *c = nullptr;
  MetScratch(int64_t n) {
    k = dalloc<float>(n, false); y = dalloc<float>(n, false); k2 = dalloc<float>(n, false);
    a = dalloc<double>(n, false); b = dalloc<double>(n, false); c = dalloc<double>(n, false);
  }
  ~MetScratch() { for (void* p : std::initializer_list<void*>{k, y, k2, a, b, c}) cudaFree(p); }
  Metrics run(CudaImpl& I, const float* p, const float* l, const float* w, int64_t n) {
    return gpu_metrics(I, p, l, w, n, k, y, a, b, c, k2);
  }
};

// Some rows of src gathered onto the GPU as a dataset of their own (the validation rows of a streamed
// training set), a chunk of rows at a time: no host copy of them.
ABACUS_CUDA_LOCAL std::unique_ptr<DevDataset> upload_rows(const DataSource& src, const std::vector<int64_t>& rows, int N, int S);

}  // namespace abacus
