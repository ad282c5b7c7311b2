// N-API surface of the CUDA addon (build/Release/abacus_runtime_cuda.node). It compiles the CPU
// addon's surface (native/addon.cc) again with CudaModel in place of CpuModel, so both addons
// expose the same NativeModel / openShard / writeShard API, and adds deviceCount(), setDevice(),
// cudaInfo(). Only libs/runtime/src/binding.ts loads it.
#include <napi.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_model.h"
#include "cupti_trace.h"

#undef NODE_API_MODULE
#define NODE_API_MODULE(modname, regfunc)
#define CpuModel CudaModel
#include "../addon.cc"
#undef CpuModel

namespace {

// The lean predict of the CUDA addon (exports.predictLean, used by cuda-backend.ts; ABACUS_CUDA_PREDICT=legacy
// keeps the shared addon.cc path). Per call it does no offsets scan (checked once when the data is
// made resident on the GPU), no std::vector staging: predictions are copied from a pinned buffer
// straight into the Float32Array allocated on the JS thread before the work is queued; labels,
// weights and keys are copied once from the input arrays when the result is built.
// The labels (and weights: 1 where a part has none; keys) of ds, part after part; wt / key may be null.
void copy_inputs(const DataSource& ds, float* lab, float* wt, int32_t* key) {
  int64_t g = 0;
  for (auto& p : ds.parts) {
    std::memcpy(lab + g, p.labels, p.rows * 4);
    if (wt) {
      if (p.weights) std::memcpy(wt + g, p.weights, p.rows * 4);
      else std::fill(wt + g, wt + g + p.rows, 1.f);
    }
    if (key && p.key) std::memcpy(key + g, p.key, p.rows * 4);
    g += p.rows;
  }
}

class CudaPredictWorker : public ModelWorker {
 public:
  CudaPredictWorker(Napi::Env env, NativeModel* m, Napi::Object self, Napi::Object data) : ModelWorker(env, m, self, data) {
    Napi::Float32Array a = Napi::Float32Array::New(env, (size_t)ds.rows);
    out = a.Data();
    pred_ref = Napi::Persistent(a);
  }
  int64_t batch = 8192;
  bool preds_only = false;  // 4th argument true: predictions alone (the caller has the labels)
  bool metrics = false;     // 5th argument true: also the metrics (exact_metrics), computed here
  double met[5] = {0, 0, 0, 0, 0};
  float* out = nullptr;
  Napi::Reference<Napi::Float32Array> pred_ref;
  void Execute() override {
    try {
      nm->model->predict_lean(ds, batch, out);
      if (metrics) {
        std::vector<float> lab((size_t)ds.rows), wt(ds.has_weights() ? (size_t)ds.rows : 0);
        copy_inputs(ds, lab.data(), ds.has_weights() ? wt.data() : nullptr, nullptr);
        exact_metrics(out, lab.data(), ds.has_weights() ? wt.data() : nullptr, ds.rows, met);
      }
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    nm->busy.store(false);
    Napi::Object o = Napi::Object::New(env);
    o.Set("predictions", pred_ref.Value());
    if (metrics) set_metrics(env, o, met);
    o.Set("deviceMs", Napi::Number::New(env, nm->model->last_device_ms));
    if (preds_only) {
      deferred.Resolve(o);
      return;
    }
    const size_t n = (size_t)ds.rows;
    Napi::Float32Array lab = Napi::Float32Array::New(env, n);
    Napi::Float32Array wt = ds.has_weights() ? Napi::Float32Array::New(env, n) : Napi::Float32Array();
    Napi::Int32Array key = ds.has_key() ? Napi::Int32Array::New(env, n) : Napi::Int32Array();
    copy_inputs(ds, lab.Data(), ds.has_weights() ? wt.Data() : nullptr, ds.has_key() ? key.Data() : nullptr);
    o.Set("labels", lab);
    if (ds.has_weights()) o.Set("weights", wt);
    if (ds.has_key()) o.Set("key", key);
    deferred.Resolve(o);
  }
};

// predictLean(model, data, batch): used by cuda-backend.ts (a prototype method defined by
// DefineClass is read-only, so the lean path is a function of the addon, not an override)
Napi::Value PredictLean(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NativeModel* nm = NativeModel::Unwrap(info[0].As<Napi::Object>());
  nm->check_idle(env);
  const char* leg = std::getenv("ABACUS_CUDA_PREDICT");
  if (leg && std::string(leg) == "legacy") {  // the shared addon.cc worker, for comparisons
    auto* w = new PredictWorker(env, nm, info[0].As<Napi::Object>(), info[1].As<Napi::Object>());
    if (info.Length() > 2 && info[2].IsNumber()) w->batch = std::max<int64_t>(1, info[2].As<Napi::Number>().Int64Value());
    if (info.Length() > 4 && info[4].IsBoolean()) w->metrics = info[4].As<Napi::Boolean>().Value();
    w->begin();
    return w->deferred.Promise();
  }
  auto* w = new CudaPredictWorker(env, nm, info[0].As<Napi::Object>(), info[1].As<Napi::Object>());
  if (info.Length() > 2 && info[2].IsNumber()) w->batch = std::max<int64_t>(1, info[2].As<Napi::Number>().Int64Value());
  if (info.Length() > 3 && info[3].IsBoolean()) w->preds_only = info[3].As<Napi::Boolean>().Value();
  if (info.Length() > 4 && info[4].IsBoolean()) w->metrics = info[4].As<Napi::Boolean>().Value();
  w->begin();
  return w->deferred.Promise();
}

// evaluateOnDevice(model, data, batch): { rows, metrics } of the data, the metrics computed on the GPU
// from predictions that never leave it (CudaModel::evaluate_device); used by cuda-backend.ts's
// evaluateOffThread (ABACUS_CUDA_EVAL_METRICS=host: the predictions copied back and the metrics computed
// on this worker's thread instead, as predictLean's 5th argument does)
class CudaEvaluateWorker : public ModelWorker {
 public:
  using ModelWorker::ModelWorker;
  int64_t batch = 8192;
  double met[5] = {0, 0, 0, 0, 0};
  void Execute() override {
    try {
      nm->model->evaluate_device(ds, batch, met);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    nm->busy.store(false);
    Napi::Object o = Napi::Object::New(env);
    o.Set("rows", Napi::Number::New(env, (double)ds.rows));
    set_metrics(env, o, met);
    o.Set("deviceMs", Napi::Number::New(env, nm->model->last_device_ms));
    deferred.Resolve(o);
  }
};
Napi::Value EvaluateOnDevice(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  NativeModel* nm = NativeModel::Unwrap(info[0].As<Napi::Object>());
  nm->check_idle(env);
  auto* w = new CudaEvaluateWorker(env, nm, info[0].As<Napi::Object>(), info[1].As<Napi::Object>());
  if (info.Length() > 2 && info[2].IsNumber()) w->batch = std::max<int64_t>(1, info[2].As<Napi::Number>().Int64Value());
  w->begin();
  return w->deferred.Promise();
}
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

// traceStart(): CUPTI activity trace from here (returns "" or why CUPTI is unavailable);
// traceStop(regions): the region's launch counts and per-kernel times as a JSON string.
Napi::Value TraceStart(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), abacus::cupti_trace_start()); }
Napi::Value TraceStop(const Napi::CallbackInfo& info) {
  const int64_t regions = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int64Value() : 1;
  return Napi::String::New(info.Env(), abacus::cupti_trace_stop(regions));
}

// contextLost(device): "" while the process's CUDA context on the device is usable, else why not
Napi::Value ContextLost(const Napi::CallbackInfo& info) {
  const int d = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  return Napi::String::New(info.Env(), abacus::cuda_context_lost(d));
}
// injectDeviceFault(device): debug / fault injection only (the worker calls it only when configured
// to): a trapping kernel; the process's context on the device is lost afterwards
Napi::Value InjectDeviceFault(const Napi::CallbackInfo& info) {
  const int d = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  return Napi::String::New(info.Env(), abacus::cuda_inject_fault(d));
}

Napi::Object InitCuda(Napi::Env env, Napi::Object exports) {
  Init(env, exports);
  exports.Set("backend", "cuda");
  exports.Set("predictLean", Napi::Function::New(env, PredictLean, "predictLean"));
  exports.Set("evaluateOnDevice", Napi::Function::New(env, EvaluateOnDevice, "evaluateOnDevice"));
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount));
  exports.Set("setDevice", Napi::Function::New(env, SetDevice));
  exports.Set("cudaInfo", Napi::Function::New(env, CudaInfo));
  exports.Set("traceStart", Napi::Function::New(env, TraceStart));
  exports.Set("contextLost", Napi::Function::New(env, ContextLost));
  exports.Set("injectDeviceFault", Napi::Function::New(env, InjectDeviceFault));
  exports.Set("contextLostTag", abacus::kCudaContextLostTag);
  exports.Set("traceStop", Napi::Function::New(env, TraceStop));
  return exports;
}

}  // namespace

static napi_value abacus_cuda_init(napi_env env, napi_value exports) { return Napi::RegisterModule(env, exports, InitCuda); }
NAPI_MODULE(abacus_runtime_cuda, abacus_cuda_init)
