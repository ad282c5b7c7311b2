// Ablation on the GPU: the shared first-layer pre-activation once per batch, then per (group,
// repeat) only the group's input change (permutation applied in the lookup) and the layers above;
// seeded Fisher-Yates permutations generated on host threads while the GPU works; all metrics in
// one segmented pass (metrics.cu).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../common/rng.h"
#include "cuda_impl.cuh"

namespace abacus {

void CudaModel::ablate_(const DataSource& ds, const std::vector<AblationGroup>& groups, int repeats, uint64_t seed,
                        int64_t batch, Metrics& base, std::vector<Metrics>& out, std::vector<Metrics>* base_folds,
                        std::vector<Metrics>* out_folds, int folds) {
  CudaImpl& I = *impl_;
  CK(cudaSetDevice(I.dev));
  for (auto f : off)
    if (f) throw std::runtime_error("ablate: this model has inputs switched off; switch them on first");
  if (I.L == 0 || I.cached) {  // no hidden layer, or the tables in host memory: the host mirror does it
    download(I, *host_);
    to_host_state();
    host_->ablate(ds, groups, repeats, seed, batch, base, out, base_folds, out_folds, folds);
    return;
  }
  batch = I.eval_batch(batch);
  upload(I, *host_, frozen, off);
  const DevDataset& dd = resident(I, ds);
  const int F = (int)std::max<int64_t>(1, std::min<int64_t>(folds, ds.rows / 200));
  if (base_folds) base_folds->clear();
  if (out_folds) out_folds->clear();
  const int64_t n = ds.rows;
  const int G = (int)groups.size(), C = G * repeats, N = I.N, D = I.D;
  const int h1 = I.out_dim[0];
  const bool hw = ds.has_weights();
  I.ensure(std::min(batch, std::max<int64_t>(n, 1)));
  const bool bf = I.bf16_ready(std::min(batch, std::max<int64_t>(n, 1)));  // the same BF16 forward as predict
  if (bf) I.refresh_wb();
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(C, (int64_t(1) << 26) / std::max<int64_t>(n, 1)));
  out.assign(C, Metrics{});
  Prof P(I, "ablate");
  CudaImpl::EvalCtx ectx(I.eval_ctx);
  // per group: first-layer weight columns of its inputs (W0 is h1 x in0, column-major: input c's
  // weights are h1 contiguous floats), its numeric columns and slots. A group whose inputs are
  // contiguous columns (one slot, one numeric) points into the weights; others are packed with
  // device-to-device copies. Group index lists: one upload. No per-group cudaMalloc.
  std::vector<const float*> wg(G);
  std::vector<int> gwidth(G);
  std::vector<int64_t> wpack_off(G, -1);
  std::vector<int> idx_host;
  std::vector<int64_t> gnum_off(G), gslot_off(G);
  int64_t wpack_total = 0;
  std::vector<std::vector<int>> gcols(G);
  for (int g = 0; g < G; ++g) {
    auto& cols = gcols[g];
    for (int j : groups[g].numeric) cols.push_back(j);
    for (int s : groups[g].slots)
      for (int d = 0; d < D; ++d) cols.push_back(N + s * D + d);
    gwidth[g] = (int)cols.size();
    bool contiguous = true;
    for (size_t c = 1; c < cols.size(); ++c) contiguous &= cols[c] == cols[c - 1] + 1;
    if (!contiguous) { wpack_off[g] = wpack_total; wpack_total += (int64_t)cols.size() * h1; }
    gnum_off[g] = (int64_t)idx_host.size();
    idx_host.insert(idx_host.end(), groups[g].numeric.begin(), groups[g].numeric.end());
    gslot_off[g] = (int64_t)idx_host.size();
    idx_host.insert(idx_host.end(), groups[g].slots.begin(), groups[g].slots.end());
  }
  float* wpack = (float*)I.scratch("abl.wpack", std::max<int64_t>(wpack_total, 1) * 4);
  int* gidx = (int*)I.scratch("abl.gidx", std::max<size_t>(idx_host.size(), 1) * 4);
  if (!idx_host.empty()) CK(cudaMemcpyAsync(gidx, idx_host.data(), idx_host.size() * 4, cudaMemcpyHostToDevice, I.st));
  const float* W0d = I.dense + I.w_off[0];
  for (int g = 0; g < G; ++g) {
    if (gcols[g].empty()) { wg[g] = W0d; continue; }
    if (wpack_off[g] < 0) { wg[g] = W0d + (int64_t)gcols[g][0] * h1; continue; }
    float* dst = wpack + wpack_off[g];
    for (size_t c = 0; c < gcols[g].size(); ++c)
      CK(cudaMemcpyAsync(dst + c * h1, W0d + (int64_t)gcols[g][c] * h1, 4 * h1, cudaMemcpyDeviceToDevice, I.st));
    wg[g] = dst;
  }
  int maxgw = 1;
  for (int g = 0; g < G; ++g) maxgw = std::max(maxgw, gwidth[g]);
  const int64_t Bc = std::min(batch, std::max<int64_t>(n, 1));
  float* delta = (float*)I.scratch("abl.delta", Bc * maxgw * 4);
  float* base_pred = (float*)I.scratch("abl.base_pred", std::max<int64_t>(n, 1) * 4);
  float* labd = (float*)I.scratch("abl.lab", std::max<int64_t>(n, 1) * 4);
  float* wtd = (float*)I.scratch("abl.wt", std::max<int64_t>(n, 1) * 4);
  float* preds = (float*)I.scratch("abl.preds", std::max<int64_t>(chunk * n, 1) * 4);
  // permutations as int32 (rows < 2^31 here), staged in a pageable host vector kept across calls
  // (a first-call cudaMallocHost of the pinned buffer cost ~10 ms, more than the copy it speeds up)
  if (n >= (int64_t(1) << 31)) throw std::runtime_error("ablate: more than 2^31 rows");
  int32_t* perms = (int32_t*)I.scratch("abl.perms", std::max<int64_t>(chunk * n, 1) * 4);
  if (I.hperm_cap < chunk * n) {
    CK(cudaStreamSynchronize(I.st));
    if (I.hperm32) cudaFreeHost(I.hperm32);
    I.hperm32 = nullptr;
    CK(cudaMallocHost(&I.hperm32, std::max<int64_t>(chunk * n, 1) * 4));
    I.hperm_cap = chunk * n;
  }
  int32_t* hperm = I.hperm32;
  const k::Layout Lo = I.layout();
  const float* wn = I.wide ? I.dense + I.wide_num_off : nullptr;
  P.mark("setup");
  auto cleanup = [&] { cudaStreamSynchronize(I.st); };
  // permutations: the same seeded Fisher-Yates as the CPU backend (identical results), generated
  // on all host cores (not only the model's thread count) while the GPU computes the base pass
  // at most 8 threads and 4 cores left free: the thread queueing the GPU work must not be crowded
  // out (the GPU needs ~0.25 ms per configuration, a thread makes a 65,536-row permutation in ~0.4 ms)
  const unsigned hc = std::max(1u, std::thread::hardware_concurrency());
  const int hw_threads = (int)std::max<unsigned>(1, std::min<unsigned>(8, hc > 4 ? hc - 4 : 1));
  // configuration c of the chunk is ready once ready[c] is set: the GPU loop copies it up and
  // queues its passes while the threads still generate the later ones
  std::unique_ptr<std::atomic<int>[]> ready(new std::atomic<int>[std::max<int64_t>(chunk, 1)]);
  std::atomic<bool> gen_failed{false};
  auto gen_perms = [&](int64_t c0, int64_t cn) {
    std::vector<std::thread> ths;
    const int nt = (int)std::min<int64_t>(hw_threads, cn);
    for (int t = 0; t < nt; ++t)
      ths.emplace_back([&, t] {
        try {
          std::vector<int64_t> p;
          for (int64_t c = t; c < cn; c += nt) {
            if (gen_failed.load()) return;
            const int g = (int)((c0 + c) / repeats), r = (int)((c0 + c) % repeats);
            seeded_permutation(p, n, mix_seed(seed, 101 + g, r));
            int32_t* dst = hperm + c * n;
            for (int64_t i = 0; i < n; ++i) dst[i] = (int32_t)p[i];
            ready[c].store(1, std::memory_order_release);
          }
        } catch (...) {
          gen_failed.store(true);
        }
      });
    for (auto& th : ths) th.join();
  };
  try {
    for (int64_t c0 = 0; c0 < std::max<int64_t>(C, 1); c0 += chunk) {
      const int64_t cn = std::min<int64_t>(chunk, C - c0);
      CK(cudaStreamSynchronize(I.st));  // hperm may still be read by the previous chunk's copies
      for (int64_t c = 0; c < cn; ++c) ready[c].store(0);
      // host permutations on their own threads while the GPU runs this chunk's shared first layer
      // and the base pass, then each configuration as soon as its permutation is there
      std::thread pth;
      struct Joiner {
        std::thread& t;
        ~Joiner() { if (t.joinable()) t.join(); }
      } joiner{pth};
      if (cn > 0) pth = std::thread([&] { gen_perms(c0, cn); });
      auto wait_perm = [&](int64_t c) {
        while (!ready[c].load(std::memory_order_acquire)) {
          if (gen_failed.load()) throw std::runtime_error("ablate: generating permutations failed");
          std::this_thread::yield();
        }
      };
      for (int64_t b0 = 0; b0 < n; b0 += batch) {
        if (cancel.load()) throw std::runtime_error("cancelled");
        const int64_t B = std::min(batch, n - b0);
        if (I.wide) CK(cudaMemsetAsync(I.widev, 0, B * 4, I.st));
        // FP32 inputs for the deltas; with the BF16 forward also BF16 inputs for the first layer
        I.gather(dd.d, nullptr, nullptr, b0, B, false, bf ? 3 : 1);
        // shared first-layer pre-activation (no ReLU), then the base prediction
        if (bf)
          I.gemm_bf16_f32_must(h1, B, I.k0, I.Wb[0], h1, I.H0b, I.ld0, I.zbase, h1, lt::EPI_BIAS, I.dense + I.b_off[0]);
        else
          I.gemm_must(lt::OP_N, lt::OP_N, h1, B, I.k0, I.dense + I.w_off[0], h1, I.H0, I.ld0, 0.f, nullptr, h1, I.zbase,
                      h1, lt::EPI_BIAS, I.dense + I.b_off[0]);
        if (c0 == 0) {
          if (bf) {
            k::to_bf16<<<blocks_for(std::min<int64_t>(B * h1, 1 << 20)), 256, 0, I.st>>>(I.zbase, I.Hb[0], B * h1, true);
            I.mlp_forward_bf16(B, 1);
          } else {
            k::relu_copy<<<blocks_for(B * h1), 256, 0, I.st>>>(I.zbase, I.H[0], B * h1);
            I.mlp_forward(B, 1, false);
          }
          k::head<<<blocks_for(B * 32), 256, 0, I.st>>>(I.layer_in(I.L), I.in_dim[I.L], (int)I.ld_in(I.L),
                                                        I.dense + I.w_off[I.L], I.dense + I.b_off[I.L],
                                                        I.wide ? I.widev : nullptr, I.S + 1, nullptr, I.lab, I.wt, B, false, nullptr,
                                                        nullptr, nullptr, nullptr, nullptr, base_pred, b0, labd, wtd);
        }
        for (int64_t c = 0; c < cn; ++c) {
          if (b0 == 0) {
            wait_perm(c);
            CK(cudaMemcpyAsync(perms + c * n, hperm + c * n, n * 4, cudaMemcpyHostToDevice, I.st));
          }
          const int g = (int)((c0 + c) / repeats);
          const int gw = gwidth[g];
          if (I.wide) CK(cudaMemsetAsync(I.dwide, 0, B * 4, I.st));
          if (gw > 0) {
            k::ablation_delta<<<blocks_for(B * gw), 256, 0, I.st>>>(
                dd.d, Lo, perms + c * n, b0, B, I.nmean, I.nstd, I.table, I.wtab, wn, I.H0, gidx + gnum_off[g],
                (int)groups[g].numeric.size(), gidx + gslot_off[g], (int)groups[g].slots.size(), delta, I.dwide);
            // first layer is linear: swap in the group's contribution on top of the shared part
            const size_t smem = ((size_t)h1 * gw + (size_t)k::kAblRows * gw) * sizeof(float);
            const int ablocks = (int)((B + k::kAblRows - 1) / k::kAblRows);
            if (bf && gw == 16 && h1 % 4 == 0 && h1 / 4 <= 256 && (uintptr_t)wg[g] % 16 == 0) {
              k::ablation_update_bf16_reg<16><<<(int)((B + k::kAblRowsReg - 1) / k::kAblRowsReg), 256, 0, I.st>>>(
                  I.zbase, wg[g], delta, B, h1, I.Hb[0]);
            } else if (bf && smem <= 48 * 1024 && h1 % 4 == 0 && h1 / 4 <= 256) {
              k::ablation_update_bf16_v4<<<ablocks, 256, smem, I.st>>>(I.zbase, wg[g], delta, B, h1, gw, I.Hb[0]);
            } else {  // any other shape: the FP32 product, converted to BF16 when the forward is BF16
              I.gemm_must(lt::OP_N, lt::OP_N, h1, B, gw, wg[g], h1, delta, gw, 1.f, I.zbase, h1, I.H[0], h1, lt::EPI_RELU);
              if (bf) k::to_bf16<<<blocks_for(std::min<int64_t>(B * h1, 1 << 20)), 256, 0, I.st>>>(I.H[0], I.Hb[0], B * h1, false);
            }
          } else if (bf) {
            k::to_bf16<<<blocks_for(std::min<int64_t>(B * h1, 1 << 20)), 256, 0, I.st>>>(I.zbase, I.Hb[0], B * h1, true);
          } else {
            k::relu_copy<<<blocks_for(B * h1), 256, 0, I.st>>>(I.zbase, I.H[0], B * h1);
          }
          if (bf) I.mlp_forward_bf16(B, 1);
          else I.mlp_forward(B, 1, false);
          k::head<<<blocks_for(B * 32), 256, 0, I.st>>>(I.layer_in(I.L), I.in_dim[I.L], (int)I.ld_in(I.L),
                                                        I.dense + I.w_off[I.L], I.dense + I.b_off[I.L],
                                                        I.wide ? I.widev : nullptr, I.S + 1, I.wide ? I.dwide : nullptr, I.lab,
                                                        I.wt, B, false, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                        preds + c * n, b0, nullptr, nullptr);
        }
      }
      if (pth.joinable()) pth.join();
      if (gen_failed.load()) throw std::runtime_error("ablate: generating permutations failed");
      P.mark("configs_gpu");
      if (c0 == 0) {
        std::vector<Metrics> bw;
        seg_metrics(I, base_pred, 1, n, F, labd, hw ? wtd : nullptr, bw, base_folds);
        base = bw[0];
      }
      if (cn > 0) {
        std::vector<Metrics> ow;
        seg_metrics(I, preds, cn, n, F, labd, hw ? wtd : nullptr, ow, out_folds);
        for (int64_t c = 0; c < cn; ++c) out[c0 + c] = ow[c];
      }
      P.mark("metrics");
      if (C == 0) break;
    }
    CK(cudaStreamSynchronize(I.st));
    CK(cudaGetLastError());
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
}

}  // namespace abacus
