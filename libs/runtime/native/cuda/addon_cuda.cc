// N-API surface of the CUDA addon (build/Release/abacus_runtime_cuda.node). It compiles the CPU
// addon's surface (native/addon.cc) again with CudaModel in place of CpuModel, so both addons
// expose the same NativeModel / openShard / writeShard API, and adds deviceCount(), setDevice(),
// cudaInfo(). Only libs/runtime/src/binding.ts loads it.
#include <napi.h>

#include "cuda_model.h"

#undef NODE_API_MODULE
#define NODE_API_MODULE(modname, regfunc)
#define CpuModel CudaModel
#include "../addon.cc"
#undef CpuModel

namespace {

Napi::Value DeviceCount(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), abacus::cuda_device_count()); }

void SetDevice(const Napi::CallbackInfo& info) {
  abacus::cuda_set_next_device(info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0);
}

Napi::Value CudaInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  const int n = abacus::cuda_device_count();
  o.Set("devices", n);
  Napi::Array names = Napi::Array::New(env, n);
  for (int i = 0; i < n; ++i) names.Set((uint32_t)i, abacus::cuda_device_name(i));
  o.Set("names", names);
  o.Set("status", abacus::cuda_status_line());
  return o;
}

Napi::Object InitCuda(Napi::Env env, Napi::Object exports) {
  Init(env, exports);
  exports.Set("backend", "cuda");
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount));
  exports.Set("setDevice", Napi::Function::New(env, SetDevice));
  exports.Set("cudaInfo", Napi::Function::New(env, CudaInfo));
  return exports;
}

}  // namespace

static napi_value abacus_cuda_init(napi_env env, napi_value exports) { return Napi::RegisterModule(env, exports, InitCuda); }
NAPI_MODULE(abacus_runtime_cuda, abacus_cuda_init)
