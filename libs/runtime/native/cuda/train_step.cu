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
    for (void* p : std::initializer_list<void*>{skeys, skeys2, svals, svals2, sort_tmp})
      if (p) cudaFree(p);
    sort_cap = n;
    skeys = dalloc<uint32_t>(n, false);
    skeys2 = dalloc<uint32_t>(n, false);
    svals = dalloc<int32_t>(n, false);
    svals2 = dalloc<int32_t>(n, false);
    sort_bits = 1;
    while ((int64_t(1) << sort_bits) <= rows) ++sort_bits;  // sentinel = rows
    sort_tmp_bytes = 0;
    CK(cub::DeviceRadixSort::SortPairs(nullptr, sort_tmp_bytes, skeys, skeys2, svals, svals2, (int)n, 0, sort_bits, st));
    sort_tmp = dalloc<uint8_t>(sort_tmp_bytes, false);
  } else if (!G) {
    G = dalloc<float>(rows * D);
    if (wide) WG = dalloc<float>(rows);
    flag = dalloc<int32_t>(rows);
    touched = dalloc<int32_t>(rows, false);
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
                                              nullptr, lab, wt, B, d.wt != nullptr, d_wsum, logit, dlogit, d_losses,
                                              d_stepidx, nullptr, 0, nullptr, nullptr);
  // output layer + dReLU/bias-grad of the last hidden layer
  float* dz = dZa;
  const int lddz = L > 0 ? nl : ld0;
  k::head_backward<<<(int)((B + k::kHeadRows - 1) / k::kHeadRows), 256, 0, st>>>(
      hl, nl, (int)ldl, dense + w_off[L], dlogit, B, L > 0, dz, lddz, gd + w_off[L], gd + b_off[L],
      L > 0 ? gd + b_off[L - 1] : nullptr, H0, ld0, N, (wide && N) ? gd + wide_num_off : nullptr);
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
        k::drelu_bgrad<<<(int)((B + k::kHeadRows - 1) / k::kHeadRows), 256, 0, st>>>(dn2, H[l - 1], B, ni,
                                                                                     gd + b_off[l - 1]);
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
      const uint32_t sentinel = (uint32_t)rows;
      k::sparse_emit<<<blocks_for(n), 256, 0, st>>>(d, Lo, order, d_b0, B, mb, dfrozen, sentinel, skeys, svals);
      size_t tb = sort_tmp_bytes;
      CK(cub::DeviceRadixSort::SortPairs(sort_tmp, tb, skeys, skeys2, svals, svals2, (int)n, 0, sort_bits, st));
      k::SparseParams so{sp.kind, sp.lr, sp.b1, sp.b2, sp.eps};
      k::sparse_apply<<<blocks_for((n + 31) / 32 * 32), 256, 0, st>>>(skeys2, svals2, n, sentinel, mb, S, D, de, lde,
                                                                        bagscale, dlogit, wide, d_step, so, table, spm,
                                                                        spv, wtab, wspm, wspv);
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

// The two windows of records a host-streamed fit reads, held on the device (ABACUS_CUDA_UNPACK=window):
// a copy thread uploads a window as soon as its records are built, on a stream of its own, once the
// steps that read the window before it in the same slot are done; each step waits for the windows it
// reads to be there.
struct DevWindows {
  int dev;
  cudaStream_t up = nullptr;
  int32_t* d[2] = {nullptr, nullptr};
  size_t cap[2] = {0, 0};  // words
  cudaEvent_t ready[2] = {nullptr, nullptr}, released[2] = {nullptr, nullptr};
  std::mutex m;
  std::condition_variable cv;
  int64_t enqueued = -1;  // the last batch whose step (and released events) are enqueued
  bool aborting = false;
  explicit DevWindows(int device) : dev(device) {
    CK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
    for (int k = 0; k < 2; ++k) {
      CK(cudaEventCreateWithFlags(&ready[k], cudaEventDisableTiming));
      CK(cudaEventCreateWithFlags(&released[k], cudaEventDisableTiming));
    }
  }
  ~DevWindows() {
    cudaSetDevice(dev);
    cudaStreamSynchronize(up);
    for (int k = 0; k < 2; ++k) {
      if (d[k]) cudaFree(d[k]);
      cudaEventDestroy(ready[k]);
      cudaEventDestroy(released[k]);
    }
    cudaStreamDestroy(up);
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
  // on a copy thread: window records built into slot k, whose previous window batch last_reader read last
  void upload(int k, const WindowRecords& rec, int64_t last_reader) {
    {
      std::unique_lock<std::mutex> lk(m);
      cv.wait(lk, [&] { return aborting || enqueued >= last_reader; });
      if (aborting) return;
    }
    CK(cudaSetDevice(dev));
    const size_t words = (size_t)rec.off.back();
    if (words > cap[k]) {
      CK(cudaEventSynchronize(released[k]));
      CK(cudaStreamSynchronize(up));
      if (d[k]) cudaFree(d[k]);
      cap[k] = words + words / 4 + 1024;
      d[k] = dalloc<int32_t>((int64_t)cap[k], false);
    }
    CK(cudaStreamWaitEvent(up, released[k], 0));
    if (words) CK(cudaMemcpyAsync(d[k], rec.words.data(), words * 4, cudaMemcpyHostToDevice, up));
    CK(cudaEventRecord(ready[k], up));
  }
};

TrainResult CudaModel::train_(const DataSource& tr, const DataSource* val, const TrainOptions& o,
                             const std::function<void(const Progress&)>& progress) {
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
  upload(I, *host_, frozen);
  std::unique_ptr<DevDataset> val_owned;  // the validation rows of a streamed set, on the GPU
  const DevDataset* dval = nullptr;
  k::DevData dd;
  int mb = 0;
  if (!streaming) {
    const DevDataset& dtr = resident(I, tr);
    dval = vds ? &resident(I, *vds) : nullptr;
    if (vds == &tr) dval = &dtr;
    // cache may have evicted dtr when adding dval: re-resolve
    dd = resident(I, tr).d;
    mb = dd.max_bag;
  } else {
    check_vocab(tr, I.vocab);
    mb = max_bag_of(tr, I.S);
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
  // from mapped shards, batches are packed from row-major copies of the epoch's windows (one record
  // a row; batch_pack.h), copied a window ahead; half the cores (up to 16) copy, half pack;
  // ABACUS_CUDA_RECORDS=0 packs from the mapped columns instead
  // ABACUS_CUDA_UNPACK=window: each window's records are uploaded whole to the device once built (on
  // the copy thread) and each batch sends only where its records are (8 bytes a row)
  std::unique_ptr<DevWindows> dwin;  // destroyed after records (whose copy threads use it)
  std::unique_ptr<RecordStream> records;
  // from records, each batch's records go to the device as they are and are unpacked there into the
  // stage (the host only copies bytes); ABACUS_CUDA_UNPACK=host packs the stage on the host instead
  bool device_unpack = false;
  abacus::RawLayout RL;
  if (streaming && tr.mapped() && RecordStream::fits(std::min<int64_t>(o.batch, n))) {
    const char* e = std::getenv("ABACUS_CUDA_RECORDS");
    if (!(e && std::string(e) == "0")) {
      const int half = (int)std::max<unsigned>(1, std::min<unsigned>(16, std::thread::hardware_concurrency()) / 2);
      records.reset(new RecordStream(tr, train_rows, o.shuffle, true, o.seed, o.epochs, I.N, I.S, half, half));
      const char* u = std::getenv("ABACUS_CUDA_UNPACK");
      device_unpack = !(u && std::string(u) == "host");
      if (device_unpack) {
        const int64_t Bc = std::min<int64_t>(o.batch, n);
        RL = abacus::raw_layout(Bc, I.N, I.S, mb, tr.has_weights());
        I.ensure_stages(std::max(SL.cap, RL.cap));
        I.ensure_raw(RL.cap, Bc);
        if (u && std::string(u) == "window") {
          dwin.reset(new DevWindows(I.dev));
          DevWindows* d = dwin.get();
          records->set_on_built([d](int k, const WindowRecords& rec, int64_t last_reader) { d->upload(k, rec, last_reader); });
        }
      }
      if (std::getenv("ABACUS_CUDA_VERBOSE"))
        fprintf(stderr, "[abacus-cuda] batches packed from row-major copies of each window (%d copy threads, %d packing threads), unpacked on the %s\n",
                half, half, dwin ? "device from windows held there" : device_unpack ? "device" : "host");
    }
  }
  // a copy thread waiting for batches that will not come (training stopped) is let go before the
  // records' threads are joined
  struct LetGo {
    DevWindows* d;
    ~LetGo() {
      if (d) d->abort();
    }
  } let_go{dwin.get()};
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
  if (!records) CK(cudaMallocHost(&pinned_order, n * 8));
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
  double window_loss = 0;
  int64_t window_steps = 0;
  std::vector<int64_t> window_ends;
  try {
    for (int ep = 0; ep < o.epochs && res.steps < total; ++ep) {
      const double te = now_s();
      // the epoch's order: pinned, one copy, then the cursor restarts
      CK(cudaStreamSynchronize(I.st));
      // the CPU backend's order (train_split.h): windowed when streamed from mapped shards
      if (!records) epoch_order(train_rows, o.shuffle, streaming && tr.mapped(), o.seed, ep, pinned_order, window_ends);
      if (records) records->start_epoch(ep);
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
        CK(cudaEventSynchronize(g.copied));  // its pinned buffer is no longer being read
        const double tp = now_s();
        const int64_t B = std::min(o.batch, n - b0);
        size_t bytes;
        if (dwin) {
          stage_batch[slot] = pack_n;
          stage_mask[slot] = records->pack_index(b0, B, pack_n, reinterpret_cast<int64_t*>(g.pin));
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
      if (streaming) prep(0, 0);
      const int64_t first_step = res.steps;
      int64_t epoch_steps = 0;
      for (int64_t b0 = 0; b0 < n && res.steps < total; b0 += o.batch) {
        if (cancel.load()) { res.cancelled = true; break; }
        const int64_t B = std::min(o.batch, n - b0);
        if (streaming) {
          CK(cudaStreamWaitEvent(I.st, I.stage[slot].copied, 0));
          if (dwin) {
            // the windows this batch reads are on the device; afterwards they may be replaced once
            // this step is done with them
            for (int k = 0; k < 2; ++k)
              if (stage_mask[slot] >> k & 1) CK(cudaStreamWaitEvent(I.st, dwin->ready[k], 0));
            I.unpack_stage(slot, B, SL, reinterpret_cast<const int64_t*>(I.stage[slot].raw), dwin->d[0], dwin->d[1], tr.has_weights());
          } else if (device_unpack) {
            const auto& g = I.stage[slot];
            I.unpack_stage(slot, B, SL, reinterpret_cast<const int64_t*>(g.raw + RL.offs), reinterpret_cast<const int32_t*>(g.raw + RL.words),
                           nullptr, tr.has_weights());
          }
          run_step(B, stage_data(slot, B), nullptr, true);
          CK(cudaEventRecord(I.stage[slot].consumed, I.st));
          if (dwin) {
            for (int k = 0; k < 2; ++k)
              if (stage_mask[slot] >> k & 1) CK(cudaEventRecord(dwin->released[k], I.st));
            dwin->stepped(stage_batch[slot]);
          }
          if (b0 + o.batch < n && res.steps + 1 < total) {
            // from mapped shards: the pages of windows already packed are released
            if (!records && tr.mapped() && window + 1 < window_ends.size() && b0 + o.batch >= window_ends[window]) {
              tr.release();
              while (window + 1 < window_ends.size() && b0 + o.batch >= window_ends[window]) ++window;
            }
            prep(b0 + o.batch, slot ^ 1);
          }
          slot ^= 1;
        } else {
          run_step(B, dd, I.d_order, false);
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
      read_losses(res.steps);
      double epoch_loss = 0;
      for (int64_t s = first_step; s < res.steps; ++s) epoch_loss += losses_host[s];
      if (res.steps) res.final_loss = losses_host[res.steps - 1];
      res.epochs = ep + 1;
      EpochRecord rec{ep, epoch_steps ? epoch_loss / epoch_steps : NAN, NAN, NAN, 0};
      if (res.cancelled) { rec.seconds = now_s() - te; res.history.push_back(rec); break; }
      if (vds && nv) {
        I.predict_dev(dval->d, vorder, nv, std::max<int64_t>(o.batch, 4096), vpred, vlab, vwt, nullptr);
        I.ensure(std::min<int64_t>(o.batch, n));
        Metrics m = ms->run(I, vpred, vlab, vds->has_weights() ? vwt : nullptr, nv);
        rec.val_auc = m.auc;
        rec.val_logloss = m.logloss;
        const double score = o.es_on_logloss ? -m.logloss : m.auc;
        if (res.best_epoch < 0 || score > best + o.min_delta) {
          best = score;
          res.best_epoch = ep;
          res.best_val_auc = m.auc;
          res.best_val_logloss = m.logloss;
          bad_epochs = 0;
          if (o.patience > 0 && o.restore_best) {
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
      }
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
  if (streaming && pack_n && std::getenv("ABACUS_CUDA_VERBOSE"))
    fprintf(stderr, "[abacus-cuda] streamed: %lld batches, host packing %.3f ms each (%d threads), waiting for a stage %.3f ms each, %.3f ms per step in all\n",
            (long long)pack_n, pack_s / pack_n * 1e3, records ? records->pack_threads() : I.pack_pool->size(), pack_wait_s / pack_n * 1e3, res.seconds / std::max<int64_t>(1, res.steps) * 1e3);
  if (records && std::getenv("ABACUS_CUDA_VERBOSE"))
    fprintf(stderr, "[abacus-cuda] window copies: %.3f s on their threads, %.3f s waited for\n", records->copy_seconds(), records->wait_seconds());
  if (have_snap && res.best_epoch != res.epochs - 1 && !res.cancelled) {
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
