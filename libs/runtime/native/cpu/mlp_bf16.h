// Eval-only MLP forward in bf16 with FP32 accumulation (AVX512-BF16 vdpbf16ps), used by predict /
// evaluate / ablate when the CPU reports avx512bf16 (ABACUS_CPU_EVAL_PRECISION=fp32 opts out).
// Training, validation during training and gradients stay FP32.
//
// Each thread runs the whole hidden stack on its own rows, a block of rows at a time, from
// thread-local buffers: no barriers and no full-batch activations. A row's result depends only on
// that row (fixed summation order), never on the thread count or the batch split.
#pragma once
#include <cstdint>
#include <vector>

namespace abacus {

struct Bf16Layer {
  int in = 0, out = 0;   // real sizes
  int kp = 0, np = 0;    // padded: kp and np multiples of 32
  std::vector<uint16_t> w;  // [np/32 panels][kp/2 pairs][32 columns][2], bf16 (round to nearest even)
  std::vector<float> bias;  // np, zero padded
};

struct Bf16Mlp {
  std::vector<Bf16Layer> layers;  // hidden layers (ReLU)
  std::vector<float> w_out;       // output layer (width 1), FP32, np of the last hidden layer, zero padded
  float b_out = 0.f;
  std::vector<float> snapshot;    // the FP32 weights these were packed from (repacked when they change)
};

// true when the CPU has AVX512-BF16 (and AVX512F/BW/VL) and ABACUS_CPU_EVAL_PRECISION is not "fp32"
// and ABACUS_NO_AVX512 is not set; read on each call, so the environment can switch it.
bool bf16_eval_enabled();
bool bf16_cpu_supported();
bool amx_cpu_supported();
// 0 FP32, 1 AVX512-BF16 (vdpbf16ps), 2 AMX-BF16. Default: AMX where present; vdpbf16ps on AMD;
// FP32 otherwise. ABACUS_CPU_EVAL_PRECISION=fp32 | avx512bf16 overrides.
int eval_kernel();
const char* eval_precision_name();  // "bf16-amx", "bf16" or "fp32"

// (Re)packs hidden layers from FP32 weights W_l [in x out] (row-major) and biases; returns false if
// nothing changed since the last pack.
bool bf16_pack(Bf16Mlp& m, const std::vector<const float*>& W, const std::vector<const float*>& b,
               const std::vector<int>& in, const std::vector<int>& out, const float* w_out, float b_out);

// Rows [0, n) of X (FP32, row stride ldx, in[l0] columns) through hidden layers l0.. and the
// output layer: logit[r] = h_last . w_out + b_out + (wide ? wide[r] : 0).
// If zpre is given (only with l0 == 0), also writes layer 0's pre-activation (bias added, no ReLU)
// as FP32 to zpre[r * ldz + j] for j < out[0].
void bf16_mlp_rows(const Bf16Mlp& m, bool amx, int l0, const float* X, int64_t ldx, int64_t n, const float* wide, float* logit,
                   float* zpre, int64_t ldz);

}  // namespace abacus
