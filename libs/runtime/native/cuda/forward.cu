// The forward pieces shared by training, predict and ablation: the per-batch workspace, the fused
// gather + embedding-bag forward into H0, the hidden layers (FP32 / TF32 with cuBLASLt epilogues,
// or BF16 inputs for evaluation) and the BF16 copies of their weights.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "cuda_impl.cuh"

namespace abacus {

// BF16 copies of the hidden layers' weights (refreshed before each evaluation: a few hundred
// thousand values)
// whether cuBLASLt has BF16-input algorithms (FP32 output) for every hidden layer at B rows; if
// not, the evaluation forward falls back to TF32 for good, saying why once
bool CudaImpl::bf16_ready(int64_t B) {
  if (!bf16eval) return false;
  for (int l = 0; l < L; ++l)
    if (!gemm_bf16(out_dim[l], B, kdim(l), nullptr, out_dim[l], nullptr, ld_in(l), nullptr, out_dim[l], false,
                   lt::EPI_RELU_BIAS, nullptr, false) ||
        (l == 0 && !gemm_bf16(out_dim[0], B, kdim(0), nullptr, out_dim[0], nullptr, ld_in(0), nullptr, out_dim[0], false,
                              lt::EPI_BIAS, nullptr, false))) {
      bf16eval = false;
      fprintf(stderr, "[abacus-cuda] BF16 evaluation forward unavailable (cuBLASLt has no BF16-input algorithm for layer %d at %ld rows): using TF32\n", l, (long)B);
      return false;
    }
  return true;
}
void CudaImpl::refresh_wb() {
  if (Wb.empty()) {
    Wb.assign(L, nullptr);
    Bb.assign(L, nullptr);
    for (int l = 0; l < L; ++l) {
      CK(cudaMalloc(&Wb[l], (size_t)out_dim[l] * kdim(l) * sizeof(__nv_bfloat16)));
      CK(cudaMalloc(&Bb[l], (size_t)out_dim[l] * sizeof(__nv_bfloat16)));
    }
  }
  for (int l = 0; l < L; ++l) {
    const int64_t cnt = (int64_t)out_dim[l] * kdim(l);
    k::to_bf16<<<blocks_for(std::min<int64_t>(cnt, 1 << 20)), 256, 0, st>>>(dense + w_off[l], Wb[l], cnt, false);
    k::to_bf16<<<blocks_for(out_dim[l]), 256, 0, st>>>(dense + b_off[l], Bb[l], out_dim[l], false);
  }
}
// hidden layers from `from` with BF16 inputs (H0b / Hb) and weights; the last one writes FP32 H[L-1]
void CudaImpl::mlp_forward_bf16(int64_t B, int from, int to) {
  for (int l = from; l < (to < 0 ? L : to); ++l) {
    const __nv_bfloat16* in = l == 0 ? H0b : Hb[l - 1];
    const bool last = l == L - 1;
    // hidden outputs in BF16 straight from the epilogue; if cuBLASLt has no such algorithm, FP32
    // output and a conversion
    if (!last && gemm_bf16(out_dim[l], B, kdim(l), Wb[l], out_dim[l], in, ld_in(l), Hb[l], out_dim[l], true,
                           lt::EPI_RELU_BIAS, Bb[l]))
      continue;
    gemm_bf16_f32_must(out_dim[l], B, kdim(l), Wb[l], out_dim[l], in, ld_in(l), H[l], out_dim[l], lt::EPI_RELU_BIAS,
                       dense + b_off[l]);
    if (!last) k::to_bf16<<<blocks_for(std::min<int64_t>(B * out_dim[l], 1 << 20)), 256, 0, st>>>(H[l], Hb[l], B * out_dim[l], false);
  }
}

void CudaImpl::ensure(int64_t B) {
  if (B <= cap) return;
  cudaStreamSynchronize(st);
  for (auto& g : graphs) cudaGraphExecDestroy(g.exec);
  graphs.clear();
  for (void* p : std::initializer_list<void*>{H0, logit, dlogit, widev, lab, wt, bagscale, demb, dZa, dZb, zbase, dwide, hpart})
    if (p) cudaFree(p);
  for (auto* p : H) cudaFree(p);
  for (auto* p : aux) cudaFree(p);
  cap = B;
  H0 = dalloc<float>(B * ld0);
  logit = dalloc<float>(B);
  dlogit = dalloc<float>(B);
  widev = dalloc<float>(B * (S + 1));  // the wide part per (row, slot), numeric last: summed by the head
  dwide = dalloc<float>(B);
  lab = dalloc<float>(B);
  wt = dalloc<float>(B);
  bagscale = dalloc<float>(B * std::max(1, S));
  demb = dalloc<float>(B * std::max(1, S * D));
  int maxw = ld0;
  for (int l = 0; l < L; ++l) maxw = std::max(maxw, out_dim[l]);
  dZa = dalloc<float>(B * maxw);
  dZb = dalloc<float>(B * maxw);
  zbase = dalloc<float>(B * (L > 0 ? out_dim[0] : 1));
  // the output layer's backward: each block's sums of kHeadRows rows (head_backward, drelu_bgrad)
  {
    const int64_t blocks = (B + k::kHeadRows - 1) / k::kHeadRows;
    int64_t pw = 2 * (int64_t)in_dim[L] + N + 1;
    for (int l = 0; l < L; ++l) pw = std::max<int64_t>(pw, in_dim[l]);
    hpart = dalloc<float>(blocks * pw, false);
  }
  free_bf16_acts();
  if (bf16eval) {
    H0b = dalloc<__nv_bfloat16>(B * ld0);
    Hb.assign(std::max(0, L - 1), nullptr);
    for (int l = 0; l + 1 < L; ++l) Hb[l] = dalloc<__nv_bfloat16>(B * out_dim[l]);
  }
  H.assign(L, nullptr);
  aux.assign(L, nullptr);
  aux_ld.assign(L, 0);
  for (int l = 0; l < L; ++l) {
    H[l] = dalloc<float>(B * out_dim[l]);
    aux_ld[l] = round_up(out_dim[l], 128);
    aux[l] = dalloc<uint8_t>(aux_ld[l] / 8 * B);
  }
}

// forward through the hidden layers from `from`; aux masks kept when training
void CudaImpl::mlp_forward(int64_t B, int from, bool train, int to) {
  for (int l = from; l < (to < 0 ? L : to); ++l) {
    const float* W = dense + w_off[l];
    const float* bias = dense + b_off[l];
    bool done = false;
    if (train && use_epi)
      done = gemm(lt::OP_N, lt::OP_N, out_dim[l], B, kdim(l), W, out_dim[l], layer_in(l), ld_in(l), 0.f, nullptr,
                  out_dim[l], H[l], out_dim[l], lt::EPI_RELU_AUX_BIAS, bias, aux[l], aux_ld[l]);
    if (!done)
      gemm_must(lt::OP_N, lt::OP_N, out_dim[l], B, kdim(l), W, out_dim[l], layer_in(l), ld_in(l), 0.f, nullptr,
                out_dim[l], H[l], out_dim[l], lt::EPI_RELU_BIAS, bias);
  }
}

// outs: 1 = FP32 H0, 2 = BF16 H0b, 3 = both
void CudaImpl::gather(const k::DevData& d, const int64_t* order, const int64_t* b0p, int64_t b0h, int64_t B, bool keep_scale,
                      int outs) {
  float* h0 = (outs & 1) ? H0 : nullptr;
  __nv_bfloat16* h0b = (outs & 2) ? H0b : nullptr;
  const k::Layout Lo = layout();
  const bool v4 = D % 4 == 0;
  const int64_t tpb = v4 ? D / 4 : D;
  const int64_t threads = B * S * tpb + B;
  const float* wn = wide ? dense + wide_num_off : nullptr;
  if (v4)
    k::gather_embed<4><<<blocks_for(threads), 256, 0, st>>>(d, Lo, order, b0p, b0h, B, nmean, nstd, table, wtab, wn, h0,
                                                           keep_scale ? bagscale : nullptr, widev, lab, wt, d_wsum, h0b);
  else
    k::gather_embed<1><<<blocks_for(B * S * D + B), 256, 0, st>>>(d, Lo, order, b0p, b0h, B, nmean, nstd, table, wtab,
                                                                 wn, h0, keep_scale ? bagscale : nullptr, widev, lab,
                                                                 wt, d_wsum, h0b);
}

}  // namespace abacus
