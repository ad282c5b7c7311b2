// cuBLASLt products of the CUDA model: a plan per shape / epilogue / operand alignment, cached;
// an opt-in autotune of large evaluation products; the BF16-input products of the evaluation forward.
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cuda_impl.cuh"

namespace abacus {

// col-major D(m x n) = op(A) op(B) (+ beta C), with an epilogue; false when no algorithm fits
bool CudaImpl::gemm(int opA, int opB, int64_t m, int64_t n, int64_t kk, const float* A, int64_t lda, const float* B,
                    int64_t ldb, float beta, const float* C, int64_t ldc, float* Dp, int64_t ldd, int epi,
                    const float* bias, void* auxp, int64_t auxld) {
  char key[256];
  snprintf(key, sizeof key, "%d%d %ld %ld %ld %ld %ld %ld %ld %d %d %d %d%d%d%d", opA, opB, (long)m, (long)n, (long)kk,
           (long)lda, (long)ldb, (long)ldc, (long)ldd, epi, beta != 0.f, (int)auxld, (int)((uintptr_t)A % 16),
           (int)((uintptr_t)B % 16), (int)((uintptr_t)Dp % 16), (int)((uintptr_t)bias % 16));
  auto it = plans.find(key);
  if (it == plans.end()) {
    GemmPlan p;
    api->descCreate(&p.desc, tf32 ? lt::COMPUTE_32F_FAST_TF32 : lt::COMPUTE_32F, lt::R_32F);
    api->descSet(p.desc, lt::DESC_TRANSA, &opA, sizeof opA);
    api->descSet(p.desc, lt::DESC_TRANSB, &opB, sizeof opB);
    api->descSet(p.desc, lt::DESC_EPILOGUE, &epi, sizeof epi);
    if (bias) api->descSet(p.desc, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
    if (auxp) {
      api->descSet(p.desc, lt::DESC_EPILOGUE_AUX_POINTER, &auxp, sizeof auxp);
      api->descSet(p.desc, lt::DESC_EPILOGUE_AUX_LD, &auxld, sizeof auxld);
    }
    api->layoutCreate(&p.a, lt::R_32F, opA == lt::OP_N ? m : kk, opA == lt::OP_N ? kk : m, lda);
    api->layoutCreate(&p.b, lt::R_32F, opB == lt::OP_N ? kk : n, opB == lt::OP_N ? n : kk, ldb);
    api->layoutCreate(&p.c, lt::R_32F, m, n, ldd);
    lt::MatmulPreference pref;
    api->prefCreate(&pref);
    api->prefSet(pref, lt::PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
    lt::HeuristicResult res[8];
    int got = 0;
    // autotune (opt-in, ABACUS_CUDA_AUTOTUNE=1): for large products with beta = 0 (re-running
    // them is idempotent) outside graph capture, time up to 8 heuristic candidates once on the
    // real operands and keep the fastest; otherwise the heuristic's first choice
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(st, &cap);
    const bool tune = autotune && eval_ctx && beta == 0.f && cap == cudaStreamCaptureStatusNone && (double)m * n * kk >= 1e9;
    lt::Status s = api->heuristic(lt, p.desc, p.a, p.b, p.c, p.c, pref, tune ? 8 : 1, res, &got);
    api->prefDestroy(pref);
    p.ok = s == 0 && got > 0;
    if (p.ok) p.algo = res[0].algo;
    if (p.ok && tune && got > 1) {
      if (bias) api->descSet(p.desc, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
      if (auxp) api->descSet(p.desc, lt::DESC_EPILOGUE_AUX_POINTER, &auxp, sizeof auxp);
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      const float alpha = 1.f;
      float best = 1e30f;
      for (int i = 0; i < got; ++i) {
        if (api->matmul(lt, p.desc, &alpha, A, p.a, B, p.b, &beta, Dp, p.c, Dp, p.c, &res[i].algo, ws, ws_bytes, st) != 0)
          continue;
        cudaEventRecord(e0, st);
        bool okr = true;
        for (int r = 0; r < 3 && okr; ++r)
          okr = api->matmul(lt, p.desc, &alpha, A, p.a, B, p.b, &beta, Dp, p.c, Dp, p.c, &res[i].algo, ws, ws_bytes, st) == 0;
        cudaEventRecord(e1, st);
        cudaEventSynchronize(e1);
        float ms = 0.f;
        if (okr && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms < best) { best = ms; p.algo = res[i].algo; }
      }
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
      cudaGetLastError();
    }
    it = plans.emplace(key, p).first;
  }
  GemmPlan& p = it->second;
  if (!p.ok) return false;
  if (bias) api->descSet(p.desc, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
  if (auxp) api->descSet(p.desc, lt::DESC_EPILOGUE_AUX_POINTER, &auxp, sizeof auxp);
  const float alpha = 1.f;
  lt::Status s = api->matmul(lt, p.desc, &alpha, A, p.a, B, p.b, &beta, beta != 0.f ? C : Dp, p.c, Dp, p.c, &p.algo, ws,
                             ws_bytes, st);
  if (s != 0)
    throw std::runtime_error("cublasLtMatmul failed with status " + std::to_string(s) + " (FP32 product " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(kk) + ", ld " +
                             std::to_string(lda) + "/" + std::to_string(ldb) + "/" + std::to_string(ldd) + ", epilogue " +
                             std::to_string(epi) + ")");
  (void)ldc;
  return true;
}
void CudaImpl::gemm_must(int opA, int opB, int64_t m, int64_t n, int64_t kk, const float* A, int64_t lda, const float* B,
                         int64_t ldb, float beta, const float* C, int64_t ldc, float* Dp, int64_t ldd, int epi,
                         const float* bias) {
  if (!gemm(opA, opB, m, n, kk, A, lda, B, ldb, beta, C, ldc, Dp, ldd, epi, bias))
    throw std::runtime_error("cuBLASLt found no algorithm for a " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(kk) + " product (epilogue " + std::to_string(epi) + ")");
}

// D (m x n, ldd; FP32 or BF16) = A (m x kk, BF16) * B (kk x n, BF16) with FP32 accumulation and an
// FP32 bias epilogue; column-major, no transposes (the evaluation forward only)
// (the bias has D's type: FP32 for FP32 output, BF16 for BF16 output); false if cuBLASLt has no
// algorithm for the combination
bool CudaImpl::gemm_bf16(int64_t m, int64_t n, int64_t kk, const __nv_bfloat16* A, int64_t lda, const __nv_bfloat16* Bm,
                         int64_t ldb, void* Dp, int64_t ldd, bool d_bf16, int epi, const void* bias, bool run) {
  char key[256];
  snprintf(key, sizeof key, "bf16 %ld %ld %ld %ld %ld %ld %d %d %d%d%d%d", (long)m, (long)n, (long)kk, (long)lda,
           (long)ldb, (long)ldd, (int)d_bf16, epi, (int)((uintptr_t)A % 16), (int)((uintptr_t)Bm % 16),
           (int)((uintptr_t)Dp % 16), (int)((uintptr_t)bias % 16));
  auto it = plans.find(key);
  if (it == plans.end()) {
    GemmPlan p;
    const int opn = lt::OP_N, td = d_bf16 ? lt::R_16BF : lt::R_32F;
    api->descCreate(&p.desc, lt::COMPUTE_32F, lt::R_32F);
    api->descSet(p.desc, lt::DESC_TRANSA, &opn, sizeof opn);
    api->descSet(p.desc, lt::DESC_TRANSB, &opn, sizeof opn);
    api->descSet(p.desc, lt::DESC_EPILOGUE, &epi, sizeof epi);
    if (bias) api->descSet(p.desc, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
    api->layoutCreate(&p.a, lt::R_16BF, m, kk, lda);
    api->layoutCreate(&p.b, lt::R_16BF, kk, n, ldb);
    api->layoutCreate(&p.c, td, m, n, ldd);
    lt::MatmulPreference pref;
    api->prefCreate(&pref);
    api->prefSet(pref, lt::PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
    lt::HeuristicResult res[1];
    int got = 0;
    lt::Status s = api->heuristic(lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, res, &got);
    api->prefDestroy(pref);
    p.ok = s == 0 && got > 0;
    if (p.ok) p.algo = res[0].algo;
    it = plans.emplace(key, p).first;
  }
  GemmPlan& p = it->second;
  if (!p.ok || !run) return p.ok;
  if (bias) api->descSet(p.desc, lt::DESC_BIAS_POINTER, &bias, sizeof bias);
  const float alpha = 1.f, beta = 0.f;
  lt::Status s = api->matmul(lt, p.desc, &alpha, A, p.a, Bm, p.b, &beta, Dp, p.c, Dp, p.c, &p.algo, ws, ws_bytes, st);
  if (s != 0)
    throw std::runtime_error("cublasLtMatmul (BF16) failed with status " + std::to_string(s) + " (product " +
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(kk) + ", ld " +
                             std::to_string(lda) + "/" + std::to_string(ldb) + "/" + std::to_string(ldd) + ")");
  return true;
}
void CudaImpl::gemm_bf16_f32_must(int64_t m, int64_t n, int64_t kk, const __nv_bfloat16* A, int64_t lda, const __nv_bfloat16* Bm,
                                  int64_t ldb, float* Dp, int64_t ldd, int epi, const float* bias) {
  if (!gemm_bf16(m, n, kk, A, lda, Bm, ldb, Dp, ldd, false, epi, bias))
    throw std::runtime_error("cuBLASLt found no BF16-input algorithm for a " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                             std::to_string(kk) + " product (ABACUS_CUDA_EVAL_PRECISION=tf32 avoids it)");
}

}  // namespace abacus
