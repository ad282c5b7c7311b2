// Training on the GPU: one step (gather, forward, head, backward, sparse and dense optimizer
// updates) enqueued on one stream and captured once per batch size as a CUDA graph; the epoch loop
// (order, resident or streamed batches, validation metrics, early stopping with a device snapshot).
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../common/rng.h"
#include "../common/thread_pool.h"
#include "../common/train_split.h"
#include "cuda_impl.cuh"

namespace abacus {

// buffers of the sparse backward for batches up to B (called before a step is captured)
void CudaImpl::prepare_sparse(int64_t B, int maxbag) {
  if (S == 0) return;
  if (sort_path(B, maxbag)) {
    const int64_t n = B * S * maxbag;
    if (n <= sort_cap) return;
    cudaStreamSynchronize(st);
    for (auto& g : graphs) cudaGraphExecDestroy(g.exec);
    graphs.clear();
    for (void* p : std::initializer_list<void*>{skeys, skeys2, svals, svals2, sort_tmp, slead, sleadw})
      if (p) cudaFree(p);
    sort_cap = n;
    slead = dalloc<float>((size_t)((n + 31) / 32) * D, false);
    sleadw = dalloc<float>((size_t)((n + 31) / 32), false);
    skeys = dalloc<uint32_t>(n, false);
    skeys2 = dalloc<uint32_t>(n, false);
    svals = dalloc<int32_t>(n, false);
    svals2 = dalloc<int32_t>(n, false);
    sort_bits = 1;
    while ((int64_t(1) << sort_bits) <= trows()) ++sort_bits;  // sentinel = the table's (or cache's) rows
    sort_tmp_bytes = 0;
    CK(cub::DeviceRadixSort::SortPairs(nullptr, sort_tmp_bytes, skeys, skeys2, svals, svals2, (int)n, 0, sort_bits, st));
    sort_tmp = dalloc<uint8_t>(sort_tmp_bytes, false);
  } else if (!G) {
    G = dalloc<float>(trows() * D);
    if (wide) WG = dalloc<float>(trows());
    flag = dalloc<int32_t>(trows());
    touched = dalloc<int32_t>(trows(), false);
  }
}

// one training step on rows order[*d_b0 ..+B) (all launches on st; capturable)
void CudaImpl::enqueue_step(const k::DevData& d, const int64_t* order, int64_t B, bool trainable, bool reset_cursor) {
  // streamed batches start at row 0 of their stage: the cursor is reset inside the graph
  if (reset_cursor) CK(cudaMemsetAsync(d_cursor, 0, sizeof(int64_t), st));
  k::step_begin<<<blocks_for(B), 256, 0, st>>>(B, d_cursor, d_b0, d_step, d_stepidx, d_wsum, counter,
                                               wide ? widev : nullptr);
  gather(d, order, d_b0, 0, B, true);
  mlp_forward(B, 0, true);
  const float* hl = layer_in(L);
  const int nl = in_dim[L];
  const int64_t ldl = ld_in(L);
  float* gd = dg;
  k::head<<<blocks_for(B * 32), 256, 0, st>>>(hl, nl, (int)ldl, dense + w_off[L], dense + b_off[L], wide ? widev : nullptr,
                                              S + 1, nullptr, lab, wt, B, d.wt != nullptr, d_wsum, logit, dlogit, d_losses,
                                              d_stepidx, nullptr, 0, nullptr, nullptr);
  // output layer + dReLU/bias-grad of the last hidden layer
  float* dz = dZa;
  const int lddz = L > 0 ? nl : ld0;
  // block sums, then added to the gradients in block order (no float atomics: the same on every run)
  const int hblocks = (int)((B + k::kHeadRows - 1) / k::kHeadRows);
  const int hpw = 2 * nl + N + 1;
  k::head_backward<<<hblocks, 256, 0, st>>>(hl, nl, (int)ldl, dense + w_off[L], dlogit, B, L > 0, dz, lddz, L > 0, H0, ld0,
                                            N, wide && N, hpart, hpw);
  k::head_reduce<<<blocks_for(hpw), 256, 0, st>>>(hpart, hblocks, hpw, nl, N, gd + w_off[L], L > 0 ? gd + b_off[L - 1] : nullptr,
                                                   (wide && N) ? gd + wide_num_off : nullptr, gd + b_off[L]);
  float* dn2 = dZb;
  for (int l = L - 1; l >= 0; --l) {
    const int ni = in_dim[l], no = out_dim[l];
    // dW_l = H_{l-1}^T dZ_l  (col-major: dW (no x ni) = dZ (no x B) * H^T)
    gemm_must(lt::OP_N, lt::OP_T, no, kdim(l), B, dz, no, layer_in(l), ld_in(l), 0.f, nullptr, no, gd + w_off[l], no,
              lt::EPI_DEFAULT);
    const float* W = dense + w_off[l];
    if (l > 0) {
      bool done = use_epi && gemm(lt::OP_T, lt::OP_N, ni, B, no, W, no, dz, no, 0.f, nullptr, ni, dn2, ni,
                                  lt::EPI_DRELU_BGRAD, gd + b_off[l - 1], aux[l - 1], aux_ld[l - 1]);
      if (!done) {
        gemm_must(lt::OP_T, lt::OP_N, ni, B, no, W, no, dz, no, 0.f, nullptr, ni, dn2, ni, lt::EPI_DEFAULT);
        k::drelu_bgrad<<<hblocks, 256, 0, st>>>(dn2, H[l - 1], B, ni, hpart);
        k::head_reduce<<<blocks_for(ni), 256, 0, st>>>(hpart, hblocks, ni, ni, 0, gd + b_off[l - 1], nullptr, nullptr, nullptr);
      }
      std::swap(dz, dn2);
    } else if (trainable && S > 0) {
      gemm_must(lt::OP_T, lt::OP_N, (int64_t)S * D, B, no, W + (int64_t)N * no, no, dz, no, 0.f, nullptr, S * D, demb,
                S * D, lt::EPI_DEFAULT);
    }
  }
  if (trainable && S > 0) {
    const float* de = L > 0 ? demb : dz + N;
    const int64_t lde = L > 0 ? S * D : ld0;
    const k::Layout Lo = layout();
    const int mb = d.max_bag;
    if (sort_path(B, mb)) {
      const int64_t n = B * S * mb;
      if (n > sort_cap) throw std::runtime_error("sparse sort buffers not prepared");
      const uint32_t sentinel = (uint32_t)trows();
      k::sparse_emit<<<blocks_for(n), 256, 0, st>>>(d, Lo, order, d_b0, B, mb, dfrozen, sentinel, skeys, svals);
      size_t tb = sort_tmp_bytes;
      CK(cub::DeviceRadixSort::SortPairs(sort_tmp, tb, skeys, skeys2, svals, svals2, (int)n, 0, sort_bits, st));
      k::SparseParams so{sp.kind, sp.lr, sp.b1, sp.b2, sp.eps};
      // a row's entries past its head's chunk come as the later chunks' leads (ABACUS_CUDA_SPARSE_LEADS=0:
      // the head walks them all, one thread per dimension, as before; for comparisons)
      static const bool leads = !(std::getenv("ABACUS_CUDA_SPARSE_LEADS") && std::string(std::getenv("ABACUS_CUDA_SPARSE_LEADS")) == "0");
      if (leads)
        k::sparse_chunk_lead<<<blocks_for((n + 31) / 32 * 32), 256, 0, st>>>(skeys2, svals2, n, sentinel, mb, S, D, de,
                                                                               lde, bagscale, dlogit, wide, slead, sleadw);
      k::sparse_apply<<<blocks_for((n + 31) / 32 * 32), 256, 0, st>>>(skeys2, svals2, n, sentinel, mb, S, D, de, lde,
                                                                        bagscale, dlogit, wide, d_step, so, table, spm,
                                                                        spv, wtab, wspm, wspv, leads ? slead : nullptr,
                                                                        leads ? sleadw : nullptr);
    } else if (D % 4 == 0)
      k::sparse_accumulate<4><<<blocks_for(B * S * (D / 4)), 256, 0, st>>>(d, Lo, order, d_b0, B, bagscale, dfrozen, de,
                                                                          lde, dlogit, G, WG, flag, touched, counter);
    else
      k::sparse_accumulate<1><<<blocks_for(B * S * D), 256, 0, st>>>(d, Lo, order, d_b0, B, bagscale, dfrozen, de, lde,
                                                                    dlogit, G, WG, flag, touched, counter);
    if (!sort_path(B, mb)) {
    k::SparseParams so{sp.kind, sp.lr, sp.b1, sp.b2, sp.eps};
    k::sparse_update<<<1024, 256, 0, st>>>(D, touched, counter, d_step, so, table, spm, spv, G, wtab, wspm, wspv, WG,
                                            flag);
    }
  }
  k::DenseParams dp{dn.lr, dn.b1, dn.b2, dn.eps, dn.weight_decay};
  k::dense_adam<<<blocks_for(nd), 256, 0, st>>>(dense, dg, dm, dv, nd, d_step, dp);
}

// Pinned host memory for the windows a host-streamed fit builds (portable: the copy threads that
// allocate it need no device of their own)
static void* pinned_alloc(size_t bytes) {
  void* p = nullptr;
  return cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess ? p : nullptr;
}
static void pinned_free(void* p) { cudaFreeHost(p); }

// The windows a host-streamed fit reads (ABACUS_CUDA_UNPACK=window, the default from shards): the one
// being read and the two copied ahead of it (ColumnStream's three slots), held on the device column
// by column as one dataset of K x (cap + 1) rows: slot w's rows from w * (cap + 1), its ids from
// w * idcap. A step gathers its rows from there as a resident step does, and the host sends only
// where they are (8 bytes a row). A copy thread uploads each window as soon as it is built
// (WindowColumns), on a stream of its own, once the steps that read the slot's window before it are
// done; each step waits for the windows it reads to be there.
struct DevWindows {
  static constexpr int K = ColumnStream::kMaxSlots;
  int dev, N, S;
  bool hw;
  int64_t cap, idcap;
  cudaStream_t up = nullptr;
  float *num = nullptr, *lab = nullptr, *wt = nullptr;
  int64_t* offs = nullptr;
  int32_t* ids = nullptr;
  int32_t* offs32[K] = {};  // each slot's offsets as uploaded, before place_offsets
  cudaEvent_t ready[K] = {}, released[K] = {};
  std::mutex m;
  std::condition_variable cv;
  int64_t enqueued = -1;  // the last batch whose step (and released events) are enqueued
  bool aborting = false;

  // device bytes of K windows of up to cap rows and idcap ids each
  static double bytes(int N, int S, bool hw, int64_t cap, int64_t idcap) {
    const double rows = (double)K * (double)(cap + 1);
    return rows * (N + 1 + (hw ? 1 : 0)) * 4 + (double)S * (rows + 1) * 8 + (double)K * (double)idcap * 4 + rows * S * 4;
  }
  DevWindows(int device, int n, int s, bool w, int64_t c, int64_t ic)
      : dev(device), N(n), S(s), hw(w), cap(c), idcap(std::max<int64_t>(ic, 1)) {
    CK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
    for (int k = 0; k < K; ++k) {
      CK(cudaEventCreateWithFlags(&ready[k], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&released[k], cudaEventDisableTiming));
    }
    const int64_t rows = K * (cap + 1);
    num = dalloc<float>((size_t)std::max<int64_t>(rows * N, 1), false);
    lab = dalloc<float>((size_t)rows, false);
    if (hw) wt = dalloc<float>((size_t)rows, false);
    offs = dalloc<int64_t>((size_t)S * (rows + 1) + 1, false);
    ids = dalloc<int32_t>((size_t)(K * idcap), false);
    for (int k = 0; k < K; ++k) offs32[k] = dalloc<int32_t>((size_t)S * (cap + 1) + 1, false);
  }
  ~DevWindows() {
    cudaSetDevice(dev);
    cudaStreamSynchronize(up);
    for (void* p : std::initializer_list<void*>{num, lab, wt, offs, ids})
      if (p) cudaFree(p);
    for (int k = 0; k < K; ++k) {
      if (offs32[k]) cudaFree(offs32[k]);
      cudaEventDestroy(ready[k]);
      cudaEventDestroy(released[k]);
    }
    cudaStreamDestroy(up);
  }
  int64_t stride() const { return cap + 1; }
  k::DevData data(int mb) const {
    k::DevData d;
    d.n = K * (cap + 1);
    d.num = num;
    d.lab = lab;
    d.wt = wt;
    d.offs = offs;
    d.ids = ids;
    d.max_bag = mb;
    return d;
  }
  void abort() {
    {
      std::lock_guard<std::mutex> lk(m);
      aborting = true;
    }
    cv.notify_all();
  }
  void stepped(int64_t batch) {
    {
      std::lock_guard<std::mutex> lk(m);
      enqueued = batch;
    }
    cv.notify_all();
  }
  // on a copy thread: a window built into slot k, whose previous window batch last_reader read last;
  // returns once the host's copy of the window may be rebuilt (its upload done)
  void upload(int k, const WindowColumns& w, int64_t last_reader) {
    {
      std::unique_lock<std::mutex> lk(m);
      cv.wait(lk, [&] { return aborting || enqueued >= last_reader; });
      if (aborting) return;
    }
    if (w.m > cap || w.nnz > idcap)
      throw std::runtime_error("a window of " + std::to_string(w.m) + " rows and " + std::to_string(w.nnz) +
                               " ids is larger than its place on the device (" + std::to_string(cap) + " rows, " +
                               std::to_string(idcap) + " ids)");
    CK(cudaSetDevice(dev));
    CK(cudaStreamWaitEvent(up, released[k], 0));
    const int64_t r0 = k * (cap + 1);
    if (N) CK(cudaMemcpyAsync(num + r0 * N, w.num_p(), (size_t)w.m * N * 4, cudaMemcpyHostToDevice, up));
    CK(cudaMemcpyAsync(lab + r0, w.lab_p(), (size_t)w.m * 4, cudaMemcpyHostToDevice, up));
    if (hw) CK(cudaMemcpyAsync(wt + r0, w.wt_p(), (size_t)w.m * 4, cudaMemcpyHostToDevice, up));
    if (S) {
      CK(cudaMemcpyAsync(offs32[k], w.offs_p(), (size_t)S * (w.m + 1) * 4, cudaMemcpyHostToDevice, up));
      if (w.nnz) CK(cudaMemcpyAsync(ids + k * idcap, w.ids_p(), (size_t)w.nnz * 4, cudaMemcpyHostToDevice, up));
      k::place_offsets<<<blocks_for((int64_t)S * (w.m + 1)), 256, 0, up>>>(offs32[k], w.m, S, K * (cap + 1) + 1, r0,
                                                                           k * idcap, offs);
      CK(cudaGetLastError());
    }
    CK(cudaEventRecord(ready[k], up));
    CK(cudaStreamSynchronize(up));
  }
};

TrainResult CudaModel::train_(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                             const std::function<void(const Progress&)>& progress) {
  const double ts = now_s();
  CudaImpl& I = *impl_;
  CK(cudaSetDevice(I.dev));
  TrainResult res;
  const bool streaming = stream_training(I, tr);
  // a streamed fit holds host memory for as long as it trains: leased from the process's budget
  // before its row lists are made (a fit waiting for the lease holds nothing)
  std::unique_ptr<StreamedHostLease> lease;
  if (streaming) {
    const int64_t nv = val ? val->rows : (int64_t)std::llround(tr.rows * std::max(0.0, o.val_fraction));
    lease.reset(new StreamedHostLease(streamed_host_bytes(I, tr, nv), cancel));
    if (std::getenv("ABACUS_CUDA_VERBOSE"))
      fprintf(stderr, "[abacus-cuda] streamed fit: %.2f GiB of host memory leased after %.1f s\n", lease->bytes / 1073741824.0, lease->waited_s);
  }
  std::vector<int64_t> train_rows, val_rows;
  const DataSource* vds = split_train_val(tr, val, o.val_fraction, o.seed, train_rows, val_rows);
  res.train_rows = (int64_t)train_rows.size();
  res.val_rows = (int64_t)val_rows.size();
  if (train_rows.empty()) throw std::runtime_error("no training rows");
  if (!normalized) fit_normalization(tr, train_rows);
  upload(I, *host_, frozen, off);
  std::unique_ptr<DevDataset> val_owned;  // the validation rows of a streamed set, on the GPU
  const DevDataset* dval = nullptr;
  k::DevData dd;
  int mb = 0;
  int64_t max_row_ids = 0;
  if (!streaming) {
    const DevDataset& dtr = resident(I, tr);
    dval = vds ? &resident(I, *vds) : nullptr;
    if (vds == &tr) dval = &dtr;
    // cache may have evicted dtr when adding dval: re-resolve
    dd = resident(I, tr).d;
    mb = dd.max_bag;
  } else {
    check_vocab(tr, I.vocab);
    mb = max_bag_of(tr, I.S, &max_row_ids);
    if (vds == &tr) {
      val_owned = upload_rows(tr, val_rows, I.N, I.S);
      dval = val_owned.get();
    } else if (vds) {
      dval = &resident(I, *vds);
    }
    if (!I.pack_pool) I.pack_pool.reset(new ThreadPool((int)std::max<unsigned>(1, std::min<unsigned>(16, std::thread::hardware_concurrency()))));
    if (std::getenv("ABACUS_CUDA_VERBOSE"))
      fprintf(stderr, "[abacus-cuda] training streamed from the host: %lld rows, batches packed into pinned stages (2), one copy each\n", (long long)tr.rows);
  }
  const int64_t n = (int64_t)train_rows.size();
  const int64_t steps_per_epoch = (n + o.batch - 1) / o.batch;
  int64_t total = steps_per_epoch * o.epochs;
  if (o.max_steps >= 0) total = std::min(total, o.max_steps);
  I.ensure(std::min<int64_t>(o.batch, n));
  I.prepare_sparse(std::min<int64_t>(o.batch, n), mb);
  CudaImpl::StageLayout SL;
  if (streaming) {
    SL = I.stage_layout(std::min<int64_t>(o.batch, n), mb, tr.has_weights());
    I.ensure_stages(SL.cap);
    const size_t key = std::hash<std::string>()(std::to_string(SL.num) + "/" + std::to_string(SL.lab) + "/" + std::to_string(SL.wt) + "/" +
                                                std::to_string(SL.offs) + "/" + std::to_string(SL.ids) + "/" + std::to_string(mb));
    if (key != I.stage_layout_key) {
      CK(cudaStreamSynchronize(I.st));
      for (auto& g : I.graphs) cudaGraphExecDestroy(g.exec);
      I.graphs.clear();
      I.stage_layout_key = key;
    }
  }
  std::vector<int64_t> pack_base;
  double pack_s = 0, pack_wait_s = 0;
  int64_t pack_n = 0;
  // From mapped shards the epoch's windows are copied a window ahead on threads of their own, and
  // ABACUS_CUDA_UNPACK says how batches reach the device:
  //   window (default): each window copied column by column and held on the device (DevWindows,
  //     two copied ahead); a batch sends where its rows are (8 bytes a row) and the step gathers them
  //     as a resident step does; when the windows do not fit the device's free memory, `device` instead
  //   device: each window copied row-major (records); each batch's records go to the device as they
  //     are and are unpacked there into the stage
  //   host: the records packed into the stage on the host
  // ABACUS_CUDA_RECORDS=0 packs each batch from the mapped columns instead (no windows).
  std::unique_ptr<DevWindows> dwin;  // destroyed after the streams (whose copy threads use it)
  std::unique_ptr<ColumnStream> columns;
  std::unique_ptr<RecordStream> records;
  bool device_unpack = false;
  abacus::RawLayout RL;
  const bool verbose = std::getenv("ABACUS_CUDA_VERBOSE") != nullptr;
  if (streaming && tr.mapped() && RecordStream::fits(std::min<int64_t>(o.batch, n))) {
    const char* e = std::getenv("ABACUS_CUDA_RECORDS");
    if (!(e && std::string(e) == "0")) {
      const char* u = std::getenv("ABACUS_CUDA_UNPACK");
      const std::string how = u && *u ? u : "window";
      if (how != "window" && how != "device" && how != "host")
        throw std::runtime_error("ABACUS_CUDA_UNPACK: '" + how + "' is not one of window, device, host");
      const int cores = (int)std::max<unsigned>(2, std::min<unsigned>(16, std::thread::hardware_concurrency()));
      if (how == "window") {
        // a window's rows, and at most its rows' most ids each (no more than the whole set's)
        const int64_t cap = std::min<int64_t>(n, kWindowRows);
        int64_t nnz = 0;
        for (auto& p : tr.parts)
          for (int s = 0; s < I.S; ++s) nnz += p.offs[s][p.rows] - p.offs[s][0];
        const int64_t idcap = std::min<int64_t>(cap * max_row_ids, nnz);
        const double need = DevWindows::bytes(I.N, I.S, tr.has_weights(), cap, idcap);
        size_t fr = 0, tot = 0;
        CK(cudaMemGetInfo(&fr, &tot));
        if (need <= 0.4 * (double)fr && idcap <= INT32_MAX) {
          dwin.reset(new DevWindows(I.dev, I.N, I.S, tr.has_weights(), cap, idcap));
          // the copy threads take the cores but one for this thread (which enqueues the steps) and one
          // for the rest of the process; a batch's places are found on this thread
          // (ABACUS_CUDA_COPY_THREADS: that many instead)
          const char* ct = std::getenv("ABACUS_CUDA_COPY_THREADS");
          const int copy_threads = ct && std::atoi(ct) > 0 ? std::atoi(ct) : std::max(1, cores - 2);
          columns.reset(new ColumnStream(tr, train_rows, o.shuffle, true, o.seed, o.epochs, I.N, I.S, copy_threads, 1, DevWindows::K));
          // the pinned buffers sized for a full window from the start (pinning memory takes a while:
          // not in the middle of training), its ids at a quarter over the set's mean (a window with
          // more grows its buffer)
          const int64_t typical = std::min<int64_t>(idcap, (int64_t)std::ceil(1.25 * (double)cap * (double)nnz / (double)std::max<int64_t>(1, tr.rows)) + 1024);
          const size_t most = WindowColumns::window_bytes(cap, typical, I.N, I.S, tr.has_weights());
          for (int k = 0; k < DevWindows::K; ++k) {
            columns->slot_window(k).alloc = pinned_alloc;
            columns->slot_window(k).dealloc = pinned_free;
            columns->slot_window(k).reserve(most);
          }
          DevWindows* d = dwin.get();
          columns->set_on_built([d](int k, const WindowColumns& w, int64_t last_reader) { d->upload(k, w, last_reader); });
          if (verbose)
            fprintf(stderr, "[abacus-cuda] each window copied by column (%d copy threads) and held on the device (%.2f GiB for %d), batches gathered there\n",
                    copy_threads, need / 1073741824.0, DevWindows::K);
        } else if (verbose) {
          fprintf(stderr, "[abacus-cuda] %d windows would take %.2f GiB of the device's %.2f GiB free: records shipped and unpacked on the device instead\n",
                  DevWindows::K, need / 1073741824.0, fr / 1073741824.0);
        }
      }
      if (!columns) {
        const int half = cores / 2;
        records.reset(new RecordStream(tr, train_rows, o.shuffle, true, o.seed, o.epochs, I.N, I.S, half, half));
        device_unpack = how != "host";
        if (device_unpack) {
          const int64_t Bc = std::min<int64_t>(o.batch, n);
          RL = abacus::raw_layout(Bc, I.N, I.S, mb, tr.has_weights());
          I.ensure_stages(std::max(SL.cap, RL.cap));
          I.ensure_raw(RL.cap, Bc);
        }
        if (verbose)
          fprintf(stderr, "[abacus-cuda] batches packed from row-major copies of each window (%d copy threads, %d packing threads), unpacked on the %s\n",
                  half, half, device_unpack ? "device" : "host");
      }
    }
  }
  // where a batch's rows are (the windows held on the device): read by the step from pinned host
  // memory, no copy, in a ring of kRing buffers, so the steps may queue up to kRing - 1 deep on the
  // device (ABACUS_CUDA_WINDOW_PLACES=copy: copied into the stages on the copy stream instead)
  bool mapped_places = false;
  if (dwin) {
    const char* wp = std::getenv("ABACUS_CUDA_WINDOW_PLACES");
    mapped_places = !(wp && std::string(wp) == "copy");
  }
  struct Places {
    int64_t* pin = nullptr;
    const int64_t* dev = nullptr;
    cudaEvent_t used = nullptr;  // recorded after the step that read them
    int64_t batch = -1;
    int mask = 0;
  };
  constexpr int kRing = 6;
  struct Ring {
    std::vector<Places> p;
    CudaImpl& I;
    ~Ring() {
      if (p.empty()) return;
      cudaStreamSynchronize(I.st);
      for (auto& x : p) {
        if (x.pin) cudaFreeHost(x.pin);
        if (x.used) cudaEventDestroy(x.used);
      }
    }
  } ring{{}, I};
  if (mapped_places) {
    ring.p.resize(kRing);
    for (auto& x : ring.p) {
      CK(cudaMallocHost(&x.pin, (size_t)std::min<int64_t>(o.batch, n) * 8));
      CK(cudaEventCreateWithFlags(&x.used, cudaEventDisableTiming));
      void* dp = nullptr;
      if (cudaHostGetDevicePointer(&dp, x.pin, 0) != cudaSuccess) {
        // a device that cannot read host memory: the places are copied
        cudaGetLastError();
        mapped_places = false;
        break;
      }
      x.dev = static_cast<const int64_t*>(dp);
    }
  }
  // a copy thread waiting for batches that will not come (training stopped) is let go before the
  // streams' threads are joined, and the step graphs that read the windows go with them
  struct LetGo {
    DevWindows* d;
    CudaImpl& I;
    ~LetGo() {
      if (!d) return;
      d->abort();
      cudaStreamSynchronize(I.st);
      for (size_t i = I.graphs.size(); i-- > 0;)
        if (I.graphs[i].data == d->ids) {
          cudaGraphExecDestroy(I.graphs[i].exec);
          I.graphs.erase(I.graphs.begin() + (std::ptrdiff_t)i);
        }
    }
  } let_go{dwin.get(), I};
  int64_t stage_batch[2] = {-1, -1};
  int stage_mask[2] = {0, 0};
  if (total > I.losses_cap) {
    CK(cudaStreamSynchronize(I.st));
    for (auto& g : I.graphs) cudaGraphExecDestroy(g.exec);
    I.graphs.clear();
    if (I.d_losses) cudaFree(I.d_losses);
    I.losses_cap = std::max<int64_t>(total, 1024);
    I.d_losses = dalloc<double>(I.losses_cap);
  }
  if (n > I.order_cap) {
    CK(cudaStreamSynchronize(I.st));
    for (auto& g : I.graphs) cudaGraphExecDestroy(g.exec);
    I.graphs.clear();
    if (I.d_order) cudaFree(I.d_order);
    I.order_cap = n;
    I.d_order = dalloc<int64_t>(n, false);
  }
  // the epoch's order in pinned memory (8 bytes a training row), for the device's copy or the host's
  // packing; batches packed from records follow the records' own order and need none
  int64_t* pinned_order = nullptr;
  if (!records && !columns) CK(cudaMallocHost(&pinned_order, n * 8));
  CK(cudaMemsetAsync(I.d_losses, 0, total * sizeof(double), I.st));
  const int zero = 0;
  CK(cudaMemcpyAsync(I.d_stepidx, &zero, sizeof zero, cudaMemcpyHostToDevice, I.st));
  const int64_t step0 = step;
  CK(cudaMemcpyAsync(I.d_step, &step0, 8, cudaMemcpyHostToDevice, I.st));
  CK(cudaStreamSynchronize(I.st));
  bool trainable = false;
  for (auto f : frozen) trainable |= !f;
  std::vector<double> losses_host(total, 0.0);
  int64_t losses_read = 0;
  auto read_losses = [&](int64_t upto) {
    if (upto <= losses_read) return;
    CK(cudaMemcpyAsync(losses_host.data() + losses_read, I.d_losses + losses_read, (upto - losses_read) * 8,
                       cudaMemcpyDeviceToHost, I.st));
    CK(cudaStreamSynchronize(I.st));
    losses_read = upto;
  };
  const bool use_graph = !(std::getenv("ABACUS_CUDA_NO_GRAPH") && std::string(std::getenv("ABACUS_CUDA_NO_GRAPH")) == "1");
  auto run_step = [&](int64_t B, const k::DevData& dd, const int64_t* order, bool reset_cursor) {
    if (!use_graph) { I.enqueue_step(dd, order, B, trainable, reset_cursor); return; }
    for (auto& g : I.graphs)
      if (g.B == B && g.data == dd.ids && g.order == order && g.trainable == trainable) {
        CK(cudaGraphLaunch(g.exec, I.st));
        return;
      }
    cudaGraph_t graph = nullptr;
    CK(cudaStreamBeginCapture(I.st, cudaStreamCaptureModeThreadLocal));
    std::exception_ptr failed;
    try {
      I.enqueue_step(dd, order, B, trainable, reset_cursor);
    } catch (...) {
      failed = std::current_exception();
    }
    const cudaError_t ended = cudaStreamEndCapture(I.st, &graph);
    if (failed || ended != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      if (ended == cudaErrorStreamCaptureInvalidated) {
        // Something outside this model synchronised the device while the step was being captured
        // (a device-wide sync fails during any capture and invalidates it). Nothing of the step ran:
        // clear the error and run it without a graph; the next step captures again.
        cudaGetLastError();
        I.capture_fallbacks++;
        fprintf(stderr, "[abacus-cuda] a training step's CUDA-graph capture was invalidated by a device-wide synchronisation elsewhere in the process; the step ran without the graph (%lld so far)\n",
                (long long)I.capture_fallbacks);
        I.enqueue_step(dd, order, B, trainable, reset_cursor);
        return;
      }
      if (failed) std::rethrow_exception(failed);
      ck(ended, "cudaStreamEndCapture");
    }
    if (std::getenv("ABACUS_CUDA_VERBOSE")) {
      size_t nn = 0;
      cudaGraphGetNodes(graph, nullptr, &nn);
      std::vector<cudaGraphNode_t> nodes(nn);
      cudaGraphGetNodes(graph, nodes.data(), &nn);
      size_t kern = 0;
      for (auto nd : nodes) {
        cudaGraphNodeType t;
        cudaGraphNodeGetType(nd, &t);
        kern += t == cudaGraphNodeTypeKernel;
      }
      fprintf(stderr, "[abacus-cuda] training step captured as one CUDA graph: batch %ld, %zu nodes, %zu kernel nodes (1 graph launch per step)\n", (long)B, nn, kern);
    }
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphDestroy(graph);
    I.graphs.push_back({B, dd.ids, order, trainable, exec});
    CK(cudaGraphLaunch(exec, I.st));
  };
  std::vector<float> best_snapshot_dummy;
  float *snap_table = nullptr, *snap_dense = nullptr, *snap_wide = nullptr;
  std::vector<float> snap_host, snap_host_wide;  // the tables' snapshot when they are in host memory
  bool have_snap = false;
  double best = 0;
  int bad_epochs = 0;
  MetScratch* ms = nullptr;
  float *vpred = nullptr, *vlab = nullptr, *vwt = nullptr;
  int64_t* vorder = nullptr;
  const int64_t nv = (int64_t)val_rows.size();
  if (vds && nv) {
    ms = new MetScratch(nv);
    vpred = dalloc<float>(nv, false);
    vlab = dalloc<float>(nv, false);
    vwt = dalloc<float>(nv, false);
    vorder = dalloc<int64_t>(nv, false);
    if (val_owned) {  // the validation rows were copied out: rows 0..nv-1 of their own dataset
      std::vector<int64_t> iota(nv);
      for (int64_t i = 0; i < nv; ++i) iota[i] = i;
      copy_sync(vorder, iota.data(), nv * 8, cudaMemcpyHostToDevice);
    } else {
      copy_sync(vorder, val_rows.data(), nv * 8, cudaMemcpyHostToDevice);
    }
  }
  const double t0 = now_s();
  res.setup_seconds = t0 - ts;
  double window_loss = 0;
  int64_t window_steps = 0;
  std::vector<int64_t> window_ends;
  bool have_best = false;
  // the validation rows' metrics after epoch `ep` (-1: before the first step), kept as the best (and
  // the weights as the snapshot to restore) when they improve on it
  auto validate = [&](int ep, EpochRecord& rec) {
    I.predict_dev(dval->d, vorder, nv, std::max<int64_t>(o.batch, 4096), vpred, vlab, vwt, nullptr);
    I.ensure(std::min<int64_t>(o.batch, n));
    Metrics m = ms->run(I, vpred, vlab, vds->has_weights() ? vwt : nullptr, nv);
    rec.val_auc = m.auc;
    rec.val_logloss = m.logloss;
    const double score = o.es_on_logloss ? -m.logloss : m.auc;
    if (!have_best || score > best + o.min_delta) {
      have_best = true;
      best = score;
      res.best_epoch = ep;
      res.best_val_auc = m.auc;
      res.best_val_logloss = m.logloss;
      bad_epochs = 0;
      if (o.patience > 0 && o.restore_best && I.cached) {
        // tables in host memory: the snapshot of the tables is taken there (the cached rows written
        // back first); the dense block on the device as below
        I.cache_flush(false);
        snap_host.assign(I.hh_table, I.hh_table + I.rows * I.D);
        if (I.wide) snap_host_wide.assign(I.hh_wtab, I.hh_wtab + I.rows);
        if (!snap_dense) snap_dense = dalloc<float>(I.nd, false);
        CK(cudaMemcpyAsync(snap_dense, I.dense, I.nd * 4, cudaMemcpyDeviceToDevice, I.st));
        have_snap = true;
      } else if (o.patience > 0 && o.restore_best) {
        if (!snap_table) {
          snap_table = dalloc<float>(I.rows * I.D, false);
          snap_dense = dalloc<float>(I.nd, false);
          if (I.wide) snap_wide = dalloc<float>(I.rows, false);
        }
        CK(cudaMemcpyAsync(snap_table, I.table, I.rows * I.D * 4, cudaMemcpyDeviceToDevice, I.st));
        CK(cudaMemcpyAsync(snap_dense, I.dense, I.nd * 4, cudaMemcpyDeviceToDevice, I.st));
        if (I.wide) CK(cudaMemcpyAsync(snap_wide, I.wtab, I.rows * 4, cudaMemcpyDeviceToDevice, I.st));
        have_snap = true;
      }
    } else {
      ++bad_epochs;
    }
  };
  try {
    if (o.eval_first && vds && nv) {
      const double tv = now_s();
      EpochRecord rec{-1, NAN, NAN, NAN, 0};
      validate(-1, rec);
      res.initial_val_auc = rec.val_auc;
      res.initial_val_logloss = rec.val_logloss;
      res.eval_seconds += now_s() - tv;
    }
    for (int ep = 0; ep < o.epochs && res.steps < total; ++ep) {
      const double te = now_s();
      // the epoch's order: pinned, one copy, then the cursor restarts
      CK(cudaStreamSynchronize(I.st));
      // the CPU backend's order (train_split.h): windowed when streamed from mapped shards
      if (pinned_order) epoch_order(train_rows, o.shuffle, streaming && tr.mapped(), o.seed, ep, pinned_order, window_ends);
      if (records) records->start_epoch(ep);
      if (columns) columns->start_epoch(ep);
      size_t window = 0;
      if (!streaming) {
        CK(cudaMemcpyAsync(I.d_order, pinned_order, n * 8, cudaMemcpyHostToDevice, I.st));
        const int64_t zero64 = 0;
        CK(cudaMemcpyAsync(I.d_cursor, &zero64, 8, cudaMemcpyHostToDevice, I.st));
      }
      // streamed: batch b0 packed into stage `slot` and copied on the copy stream; the step waits
      // for that copy only, and the next batch is packed and copied while the step runs
      auto stage_data = [&](int slot, int64_t B) {
        const auto& g = I.stage[slot];
        k::DevData d;
        d.n = B;
        d.num = reinterpret_cast<const float*>(g.dev + SL.num);
        d.lab = reinterpret_cast<const float*>(g.dev + SL.lab);
        d.wt = tr.has_weights() ? reinterpret_cast<const float*>(g.dev + SL.wt) : nullptr;
        d.offs = reinterpret_cast<const int64_t*>(g.dev + SL.offs);
        d.ids = reinterpret_cast<const int32_t*>(g.dev + SL.ids);
        d.max_bag = mb;
        return d;
      };
      auto prep = [&](int64_t b0, int slot) {
        auto& g = I.stage[slot];
        const double tw = now_s();
        if (mapped_places) {
          Places& pl = ring.p[pack_n % kRing];
          CK(cudaEventSynchronize(pl.used));  // the step that read them before is done
          const double tp = now_s();
          pl.batch = pack_n;
          pl.mask = columns->pack_positions(b0, std::min(o.batch, n - b0), pack_n, dwin->stride(), pl.pin);
          pack_wait_s += tp - tw;
          pack_s += now_s() - tp;
          pack_n++;
          return;
        }
        CK(cudaEventSynchronize(g.copied));  // its pinned buffer is no longer being read
        const double tp = now_s();
        const int64_t B = std::min(o.batch, n - b0);
        size_t bytes;
        if (dwin) {
          stage_batch[slot] = pack_n;
          stage_mask[slot] = columns->pack_positions(b0, B, pack_n, dwin->stride(), reinterpret_cast<int64_t*>(g.pin));
          bytes = (size_t)B * 8;
        } else {
          bytes = device_unpack ? records->pack_raw(b0, B, RL, g.pin)
                  : records     ? records->pack(b0, B, SL, g.pin, pack_base)
                                : pack_rows(*I.pack_pool, tr, pinned_order + b0, B, I.N, I.S, SL, g.pin, pack_base);
        }
        pack_wait_s += tp - tw;
        pack_s += now_s() - tp;
        pack_n++;
        CK(cudaStreamWaitEvent(I.cs, g.consumed, 0));  // the step that read its device buffer is done
        CK(cudaMemcpyAsync(device_unpack ? g.raw : g.dev, g.pin, bytes, cudaMemcpyHostToDevice, I.cs));
        CK(cudaEventRecord(g.copied, I.cs));
      };
      int slot = 0;
      bool filled_ahead = false;  // streamed from windows on the device: this batch's fill was made ahead
      if (streaming) prep(0, 0);
      const int64_t first_step = res.steps;
      int64_t epoch_steps = 0;
      // ABACUS_CUDA_VERBOSE: where a resident epoch's step time goes (the host enqueueing the steps'
      // graphs against the device running them, between two events)
      cudaEvent_t ev0 = nullptr, ev1 = nullptr;
      double enqueue_s = 0;
      const double loop_t0 = now_s();
      if (verbose && !streaming) {
        CK(cudaEventCreate(&ev0));
        CK(cudaEventCreate(&ev1));
        CK(cudaEventRecord(ev0, I.st));
      }
      for (int64_t b0 = 0; b0 < n && res.steps < total; b0 += o.batch) {
        if (cancel.load()) { res.cancelled = true; break; }
        const int64_t B = std::min(o.batch, n - b0);
        if (streaming) {
          if (!mapped_places) CK(cudaStreamWaitEvent(I.st, I.stage[slot].copied, 0));
          // the windows this batch reads are on the device (it gathers its rows there, at its places:
          // the last batch prepared); afterwards they may be replaced once this step is done with them
          Places* pl = mapped_places ? &ring.p[(pack_n - 1) % kRing] : nullptr;
          const int mask = pl ? pl->mask : stage_mask[slot];
          if (dwin) {
            for (int k = 0; k < DevWindows::K; ++k)
              if (mask >> k & 1) CK(cudaStreamWaitEvent(I.st, dwin->ready[k], 0));
            const int64_t* places = pl ? pl->dev : reinterpret_cast<const int64_t*>(I.stage[slot].dev);
            // tables in host memory: the batch's rows made resident once its windows are there, by the
            // fill made while the step before ran (below), or here (an epoch's first batch)
            if (I.cached && !filled_ahead) I.cache_fill(dwin->data(mb), places, 0, B, true);
            filled_ahead = false;
            run_step(B, dwin->data(mb), places, true);
            if (pl) CK(cudaEventRecord(pl->used, I.st));
          } else {
            if (device_unpack) {
              const auto& g = I.stage[slot];
              I.unpack_stage(slot, B, SL, reinterpret_cast<const int64_t*>(g.raw + RL.offs), reinterpret_cast<const int32_t*>(g.raw + RL.words),
                             tr.has_weights());
            }
            // tables in host memory: the batch's rows made resident once it is unpacked (a fill that
            // follows the step before)
            if (I.cached) I.cache_fill(stage_data(slot, B), nullptr, 0, B, true);
            run_step(B, stage_data(slot, B), nullptr, true);
          }
          CK(cudaEventRecord(I.stage[slot].consumed, I.st));
          if (dwin) {
            for (int k = 0; k < DevWindows::K; ++k)
              if (mask >> k & 1) CK(cudaEventRecord(dwin->released[k], I.st));
            dwin->stepped(pl ? pl->batch : stage_batch[slot]);
          }
          if (b0 + o.batch < n && res.steps + 1 < total) {
            // from mapped shards: the pages of windows already packed are released
            if (pinned_order && tr.mapped() && window + 1 < window_ends.size() && b0 + o.batch >= window_ends[window]) {
              tr.release();
              while (window + 1 < window_ends.size() && b0 + o.batch >= window_ends[window]) ++window;
            }
            prep(b0 + o.batch, slot ^ 1);
            if (I.cached && dwin) {
              // the next batch's rows made resident while this step runs, once its places and
              // windows are on the device (what its step waits for)
              const int ns = slot ^ 1;
              Places* np = mapped_places ? &ring.p[(pack_n - 1) % kRing] : nullptr;
              if (!np) CK(cudaStreamWaitEvent(I.fs, I.stage[ns].copied, 0));
              const int nmask = np ? np->mask : stage_mask[ns];
              for (int k = 0; k < DevWindows::K; ++k)
                if (nmask >> k & 1) CK(cudaStreamWaitEvent(I.fs, dwin->ready[k], 0));
              I.cache_fill(dwin->data(mb), np ? np->dev : reinterpret_cast<const int64_t*>(I.stage[ns].dev), 0,
                           std::min(o.batch, n - b0 - o.batch), true, true);
              filled_ahead = true;
            }
          }
          slot ^= 1;
        } else {
          const double tq = verbose ? now_s() : 0;
          // tables in host memory: the rows this batch reads made resident first (the epoch's first
          // batch here; each next one while this step runs)
          if (I.cached && b0 == 0) I.cache_fill(dd, I.d_order, b0, B, true);
          run_step(B, dd, I.d_order, false);
          if (I.cached && b0 + o.batch < n && res.steps + 1 < total)
            I.cache_fill(dd, I.d_order, b0 + o.batch, std::min(o.batch, n - b0 - o.batch), true, true);
          if (verbose) enqueue_s += now_s() - tq;
        }
        res.steps++;
        res.samples += B;
        epoch_steps++;
        window_steps++;
        if (progress && o.progress_every > 0 && res.steps % o.progress_every == 0) {
          read_losses(res.steps);
          double wl = 0;
          for (int64_t s = res.steps - window_steps; s < res.steps; ++s) wl += losses_host[s];
          progress({ep, res.steps, total, wl / window_steps, res.samples / (now_s() - t0), false, NAN, NAN});
          window_loss = 0;
          window_steps = 0;
        }
      }
      if (tr.mapped()) tr.release();
      if (ev0) {
        CK(cudaEventRecord(ev1, I.st));
        CK(cudaEventSynchronize(ev1));
        float gpu_ms = 0;
        CK(cudaEventElapsedTime(&gpu_ms, ev0, ev1));
        const double loop_s = now_s() - loop_t0;
        fprintf(stderr, "[abacus-cuda] epoch %d: %lld steps of batch %lld, %.3f ms a step (host enqueueing %.3f ms a step, device %.3f ms a step between events)%s\n",
                ep, (long long)epoch_steps, (long long)o.batch, loop_s / std::max<int64_t>(1, epoch_steps) * 1e3,
                enqueue_s / std::max<int64_t>(1, epoch_steps) * 1e3, gpu_ms / std::max<int64_t>(1, epoch_steps),
                I.cached ? I.cache_profile_take().c_str() : "");
        cudaEventDestroy(ev0);
        cudaEventDestroy(ev1);
      }
      read_losses(res.steps);
      double epoch_loss = 0;
      for (int64_t s = first_step; s < res.steps; ++s) epoch_loss += losses_host[s];
      if (res.steps) res.final_loss = losses_host[res.steps - 1];
      res.epochs = ep + 1;
      EpochRecord rec{ep, epoch_steps ? epoch_loss / epoch_steps : NAN, NAN, NAN, 0};
      if (res.cancelled) { rec.seconds = now_s() - te; res.history.push_back(rec); break; }
      const double tv = now_s();
      if (vds && nv) validate(ep, rec);
      res.eval_seconds += now_s() - tv;
      rec.seconds = now_s() - te;
      res.history.push_back(rec);
      if (progress) progress({ep, res.steps, total, rec.train_loss, res.samples / (now_s() - t0), true, rec.val_auc, rec.val_logloss});
      if (o.patience > 0 && bad_epochs >= o.patience) { res.stopped_early = true; break; }
    }
    CK(cudaStreamSynchronize(I.st));
    CK(cudaGetLastError());
  } catch (...) {
    cudaStreamSynchronize(I.st);
    cudaFreeHost(pinned_order);
    delete ms;
    if (I.cs) cudaStreamSynchronize(I.cs);
    cudaStreamSynchronize(I.st);
    for (void* p : std::initializer_list<void*>{vpred, vlab, vwt, vorder, snap_table, snap_dense, snap_wide}) if (p) cudaFree(p);
    val_owned.reset();
    step = step0 + res.steps;
    I.host_stale = true;
    throw;
  }
  if (I.cs) CK(cudaStreamSynchronize(I.cs));
  res.seconds = now_s() - t0;
  if (streaming && pack_n && verbose)
    fprintf(stderr, "[abacus-cuda] streamed: %lld batches, host packing %.3f ms each (%d threads), waiting for a stage %.3f ms each, %.3f ms per step in all\n",
            (long long)pack_n, pack_s / pack_n * 1e3, columns ? columns->pack_threads() : records ? records->pack_threads() : I.pack_pool->size(),
            pack_wait_s / pack_n * 1e3, res.seconds / std::max<int64_t>(1, res.steps) * 1e3);
  if (records && verbose)
    fprintf(stderr, "[abacus-cuda] window copies: %.3f s on their threads, %.3f s waited for\n", records->copy_seconds(), records->wait_seconds());
  if (columns && verbose)
    fprintf(stderr, "[abacus-cuda] window copies: %lld, %.3f s in turn on their threads (copies %.3f s, uploads %.3f s; orders made beforehand %.3f s), %.3f s waited for; batches' places %s\n",
            (long long)columns->copies(), columns->copy_seconds(), columns->build_seconds(), columns->copy_seconds() - columns->build_seconds(),
            columns->order_seconds(), columns->wait_seconds(),
            mapped_places ? "read by the device from host memory" : "copied");
  if (have_snap && res.best_epoch != res.epochs - 1 && !res.cancelled && I.cached) {
    // every cached row (its optimizer state the latest, as on the device path) written back and
    // dropped, then the tables' best values put back in host memory
    I.cache_flush(true);
    std::copy(snap_host.begin(), snap_host.end(), I.hh_table);
    if (I.wide) std::copy(snap_host_wide.begin(), snap_host_wide.end(), I.hh_wtab);
    I.cache_invalidate();  // the mirror written: the stores' copies follow it
    CK(cudaMemcpyAsync(I.dense, snap_dense, I.nd * 4, cudaMemcpyDeviceToDevice, I.st));
    CK(cudaStreamSynchronize(I.st));
  } else if (have_snap && res.best_epoch != res.epochs - 1 && !res.cancelled) {
    CK(cudaMemcpyAsync(I.table, snap_table, I.rows * I.D * 4, cudaMemcpyDeviceToDevice, I.st));
    CK(cudaMemcpyAsync(I.dense, snap_dense, I.nd * 4, cudaMemcpyDeviceToDevice, I.st));
    if (I.wide) CK(cudaMemcpyAsync(I.wtab, snap_wide, I.rows * 4, cudaMemcpyDeviceToDevice, I.st));
    CK(cudaStreamSynchronize(I.st));
  }
  cudaFreeHost(pinned_order);
  delete ms;
  CK(cudaStreamSynchronize(I.st));
  val_owned.reset();
  for (void* p : std::initializer_list<void*>{vpred, vlab, vwt, vorder, snap_table, snap_dense, snap_wide}) if (p) cudaFree(p);
  step = step0 + res.steps;
  I.host_stale = true;
  res.samples_per_s = res.samples / res.seconds;
  return res;
}

}  // namespace abacus
