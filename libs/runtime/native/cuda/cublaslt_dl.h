// cuBLASLt loaded at run time (dlopen), so the CUDA addon builds on machines without cuBLAS and
// has no link-time dependency on it. Only the types, enum values and entry points used here are
// declared; the values are those of cublasLt.h (CUDA 12/13).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace abacus {
namespace lt {

typedef int Status;  // cublasStatus_t, 0 = success
typedef struct Context* Handle;
typedef struct MatmulDescOpaque* MatmulDesc;
typedef struct MatrixLayoutOpaque* MatrixLayout;
typedef struct MatmulPreferenceOpaque* MatmulPreference;
struct MatmulAlgo { uint64_t data[8]; };
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

enum : int { COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77 };
enum : int { R_32F = 0, R_16BF = 14 };  // cudaDataType
enum : int { OP_N = 0, OP_T = 1 };
enum : int {
  DESC_TRANSA = 3, DESC_TRANSB = 4, DESC_EPILOGUE = 7, DESC_BIAS_POINTER = 8,
  DESC_EPILOGUE_AUX_POINTER = 11, DESC_EPILOGUE_AUX_LD = 12, DESC_BIAS_DATA_TYPE = 26
};
enum : int {
  EPI_DEFAULT = 1, EPI_RELU = 2, EPI_BIAS = 4, EPI_RELU_BIAS = 6, EPI_RELU_AUX_BIAS = 134,
  EPI_DRELU_BGRAD = 152, EPI_BGRADA = 256, EPI_BGRADB = 512
};
enum : int { PREF_MAX_WORKSPACE_BYTES = 1 };

struct Api {
  Status (*create)(Handle*);
  Status (*destroy)(Handle);
  Status (*descCreate)(MatmulDesc*, int computeType, int scaleType);
  Status (*descDestroy)(MatmulDesc);
  Status (*descSet)(MatmulDesc, int attr, const void* buf, size_t size);
  Status (*layoutCreate)(MatrixLayout*, int type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*layoutDestroy)(MatrixLayout);
  Status (*prefCreate)(MatmulPreference*);
  Status (*prefSet)(MatmulPreference, int attr, const void* buf, size_t size);
  Status (*prefDestroy)(MatmulPreference);
  Status (*heuristic)(Handle, MatmulDesc, MatrixLayout, MatrixLayout, MatrixLayout, MatrixLayout, MatmulPreference,
                      int requested, HeuristicResult* results, int* returned);
  Status (*matmul)(Handle, MatmulDesc, const void* alpha, const void* A, MatrixLayout, const void* B, MatrixLayout,
                   const void* beta, const void* C, MatrixLayout, void* D, MatrixLayout, const MatmulAlgo* algo,
                   void* workspace, size_t workspaceSize, void* stream);
  std::string path;
};

// Loads libcublasLt once; returns nullptr and sets *why when it cannot.
const Api* load(std::string* why);

}  // namespace lt
}  // namespace abacus
