// N-API surface of the runtime: NativeModel (params as zero-copy views, async train / predict /
// ablate), shard open / write, and CPU feature info. Only libs/runtime/src/binding.ts loads this.
#include <napi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/batch_pack.h"
#include "common/data_source.h"
#include "common/shard.h"
#include "common/train_split.h"
#include "cpu/gemm.h"
#include "cpu/model.h"

using namespace abacus;

namespace {

double num(const Napi::Object& o, const char* k, double def) {
  if (!o.Has(k)) return def;
  Napi::Value v = o.Get(k);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : def;
}
bool flag(const Napi::Object& o, const char* k, bool def) {
  if (!o.Has(k)) return def;
  Napi::Value v = o.Get(k);
  return v.IsBoolean() ? v.As<Napi::Boolean>().Value() : def;
}

class ShardHandle : public Napi::ObjectWrap<ShardHandle> {
 public:
  static Napi::FunctionReference ctor;
  std::shared_ptr<MappedShard> shard;
  static Napi::Function Init(Napi::Env env) {
    Napi::Function f = DefineClass(env, "ShardHandle", {InstanceAccessor<&ShardHandle::Json>("json"), InstanceAccessor<&ShardHandle::Rows>("rows")});
    ctor = Napi::Persistent(f);
    ctor.SuppressDestruct();
    return f;
  }
  explicit ShardHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ShardHandle>(info) {
    if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "use openShard(path)");
    shard = *info[0].As<Napi::External<std::shared_ptr<MappedShard>>>().Data();
  }
  Napi::Value Json(const Napi::CallbackInfo& info) { return Napi::String::New(info.Env(), shard->json()); }
  Napi::Value Rows(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), (double)shard->rows()); }
};
Napi::FunctionReference ShardHandle::ctor;

template <class T>
const T* typed_ptr(const Napi::Value& v, size_t* len) {
  auto a = v.As<Napi::TypedArray>();
  *len = a.ElementLength();
  return reinterpret_cast<const T*>(static_cast<const char*>(a.ArrayBuffer().Data()) + a.ByteOffset());
}

// Builds a zero-copy view of the data described by the JS object (see binding.ts NativeData).
DataSource make_source(const Napi::Env& env, const Napi::Object& d, int num_numeric, int num_slots) {
  DataSource ds;
  auto nm = d.Get("numMap").As<Napi::Int32Array>();
  for (size_t j = 0; j < nm.ElementLength(); ++j) ds.num_map.push_back(nm[j]);
  if ((int)ds.num_map.size() != num_numeric) throw Napi::Error::New(env, "numMap length does not match the model's numeric inputs");
  auto parts = d.Get("parts").As<Napi::Array>();
  for (uint32_t i = 0; i < parts.Length(); ++i) {
    Napi::Object p = parts.Get(i).As<Napi::Object>();
    DataPart part;
    size_t len;
    if (p.Has("shard")) {
      auto* h = ShardHandle::Unwrap(p.Get("shard").As<Napi::Object>());
      const MappedShard& s = *h->shard;
      ds.keep.push_back(h->shard);
      part.rows = (int64_t)s.rows();
      // rows [start, start + count) of the shard: the columns' pointers move, the slots' offsets keep
      // indexing the whole ids section
      const int64_t start = (int64_t)num(p, "start", 0), count = (int64_t)num(p, "count", (double)part.rows - start);
      if (start < 0 || count < 0 || start + count > part.rows) throw Napi::Error::New(env, "shard part: rows " + std::to_string(start) + " + " + std::to_string(count) + " are outside its " + std::to_string(part.rows));
      part.num_stride = (int64_t)num(p, "numStride", 0);
      uint64_t bytes = 0;
      part.numeric = static_cast<const float*>(s.section(kNumeric, 0, &bytes));
      if (num_numeric && (!part.numeric || bytes < (uint64_t)part.rows * part.num_stride * 4)) throw Napi::Error::New(env, "shard has no numeric section of the right size");
      part.labels = static_cast<const float*>(s.section(kLabels, 0, &bytes));
      if (!part.labels || bytes < (uint64_t)part.rows * 4) throw Napi::Error::New(env, "shard has no labels section");
      part.weights = static_cast<const float*>(s.section(kWeights, 0));
      int key_index = (int)num(p, "keyIndex", -1);
      if (key_index >= 0) part.key = static_cast<const int32_t*>(s.section(kKey, key_index));
      auto si = p.Get("slotIndex").As<Napi::Int32Array>();
      for (int k = 0; k < num_slots; ++k) {
        uint64_t ob = 0, ib = 0;
        auto* o = static_cast<const int32_t*>(s.section(kSlotOffsets, si[k], &ob));
        auto* id = static_cast<const int32_t*>(s.section(kSlotIds, si[k], &ib));
        if (!o || !id || ob != (uint64_t)(part.rows + 1) * 4) throw Napi::Error::New(env, "shard slot section missing or wrong size");
        if ((uint64_t)o[part.rows] * 4 > ib) throw Napi::Error::New(env, "shard slot offsets run past its ids");
        part.offs.push_back(o + start);
        part.ids.push_back(id);
      }
      if (part.numeric) part.numeric += start * part.num_stride;
      part.labels += start;
      if (part.weights) part.weights += start;
      // loss weights of the view's rows, given beside the shards (they override the shard's own)
      if (p.Has("weights")) {
        part.weights = typed_ptr<float>(p.Get("weights"), &len);
        if ((int64_t)len < count) throw Napi::Error::New(env, "shard part: its weights are shorter than its " + std::to_string(count) + " rows");
      }
      if (part.key) part.key += start;
      part.rows = count;
    } else {
      part.rows = (int64_t)num(p, "rows", 0);
      part.num_stride = (int64_t)num(p, "numStride", 0);
      if (num_numeric) {
        part.numeric = typed_ptr<float>(p.Get("numeric"), &len);
        if ((int64_t)len < part.rows * part.num_stride) throw Napi::Error::New(env, "numeric array is shorter than rows x columns");
      }
      part.labels = typed_ptr<float>(p.Get("labels"), &len);
      if ((int64_t)len < part.rows) throw Napi::Error::New(env, "labels array is shorter than rows");
      if (p.Has("weights") && p.Get("weights").IsTypedArray()) {
        part.weights = typed_ptr<float>(p.Get("weights"), &len);
        if ((int64_t)len < part.rows) throw Napi::Error::New(env, "weights array is shorter than rows");
      }
      if (p.Has("key") && p.Get("key").IsTypedArray()) {
        part.key = typed_ptr<int32_t>(p.Get("key"), &len);
        if ((int64_t)len < part.rows) throw Napi::Error::New(env, "key array is shorter than rows");
      }
      auto offs = p.Get("offs").As<Napi::Array>(), ids = p.Get("ids").As<Napi::Array>();
      if ((int)offs.Length() != num_slots || (int)ids.Length() != num_slots) throw Napi::Error::New(env, "slot arrays do not match the model's slots");
      for (int k = 0; k < num_slots; ++k) {
        size_t ol, il;
        const int32_t* o = typed_ptr<int32_t>(offs.Get(k), &ol);
        const int32_t* id = typed_ptr<int32_t>(ids.Get(k), &il);
        if ((int64_t)ol != part.rows + 1) throw Napi::Error::New(env, "slot #" + std::to_string(k) + ": offsets must have rows + 1 entries");
        if (o[0] != 0 || o[part.rows] < 0 || (size_t)o[part.rows] > il) throw Napi::Error::New(env, "slot #" + std::to_string(k) + ": offsets must start at 0 and end within ids");
        part.offs.push_back(o);
        part.ids.push_back(id);
      }
    }
    ds.parts.push_back(std::move(part));
  }
  ds.finish();
  return ds;
}

// Offsets must be non-decreasing; checked off the event loop before any work.
void check_offsets(const DataSource& ds) {
  for (size_t i = 0; i < ds.parts.size(); ++i) {
    for (size_t s = 0; s < ds.parts[i].offs.size(); ++s) {
      const int32_t* o = ds.parts[i].offs[s];
      for (int64_t r = 0; r < ds.parts[i].rows; ++r)
        if (o[r + 1] < o[r]) throw std::runtime_error("slot #" + std::to_string(s) + ": offsets decrease at row " + std::to_string(r));
    }
    ds.release_part(i);  // mapped shards: one at a time
  }
}

// runtime/src/metrics.ts computeMetrics off the JS thread, for evaluate({ offThread }): the AUC by the
// same counts (negatives strictly below a positive plus half the equal ones; NaN with a non-finite
// prediction or one class only), exact in double and so the same number; logloss, calibration and
// the means summed in the same order in double (the logarithms may differ in the last bit).
// out: auc, logloss, calibration, mean prediction, mean label.
inline void exact_metrics(const float* pred, const float* label, const float* weight, int64_t n, double* out) {
  int64_t np = 0;
  for (int64_t i = 0; i < n; ++i) np += label[i] > 0.5f;
  const int64_t nn = n - np;
  double auc = std::numeric_limits<double>::quiet_NaN();
  bool finite = true;
  for (int64_t i = 0; i < n && finite; ++i) finite = std::isfinite(pred[i]);
  if (np > 0 && nn > 0 && finite) {
    std::vector<float> pos, neg;
    pos.reserve(np);
    neg.reserve(nn);
    for (int64_t i = 0; i < n; ++i) (label[i] > 0.5f ? pos : neg).push_back(pred[i]);
    std::sort(pos.begin(), pos.end());
    std::sort(neg.begin(), neg.end());
    double wins = 0;
    int64_t lo = 0, hi = 0;
    for (int64_t i = 0; i < np; ++i) {
      const float p = pos[i];
      while (lo < nn && neg[lo] < p) ++lo;
      if (hi < lo) hi = lo;
      while (hi < nn && neg[hi] <= p) ++hi;
      wins += (double)lo + 0.5 * (double)(hi - lo);
    }
    auc = wins / ((double)np * (double)nn);
  }
  double ll = 0, ws = 0, sp = 0, sl = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double w = weight ? (double)weight[i] : 1.0;
    const double p = std::min(std::max((double)pred[i], 1e-7), 1 - 1e-7);
    const double y = label[i];
    ll -= w * (y * std::log(p) + (1 - y) * std::log(1 - p));
    ws += w;
    sp += w * (double)pred[i];
    sl += w * y;
  }
  out[0] = auc;
  out[1] = ll / ws;
  out[2] = sl > 0 ? sp / sl : std::numeric_limits<double>::quiet_NaN();
  out[3] = sp / ws;
  out[4] = sl / ws;
}

// exact_metrics' five values as `metrics` (a Float64Array) of a predict's result
void set_metrics(Napi::Env env, Napi::Object& o, const double* met) {
  Napi::Float64Array m = Napi::Float64Array::New(env, 5);
  std::copy(met, met + 5, m.Data());
  o.Set("metrics", m);
}

Napi::Object metrics_obj(Napi::Env env, const Metrics& m) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("auc", m.auc);
  o.Set("logloss", m.logloss);
  o.Set("calibration", m.calibration);
  o.Set("meanPrediction", m.mean_pred);
  o.Set("meanLabel", m.mean_label);
  return o;
}

class NativeModel;

struct BusyGuard {
  std::atomic<bool>* b;
  ~BusyGuard() { if (b) b->store(false); }
};

class NativeModel : public Napi::ObjectWrap<NativeModel> {
 public:
  std::unique_ptr<CpuModel> model;
  std::atomic<bool> busy{false};

  // this addon's class: copyFrom accepts only its own models (the other addon's are another type)
  static Napi::FunctionReference& ctor() {
    static Napi::FunctionReference r;
    return r;
  }
  static Napi::Function Init(Napi::Env env) {
    Napi::Function f = DefineClass(env, "NativeModel",
                       {InstanceMethod<&NativeModel::Tensors>("tensors"), InstanceMethod<&NativeModel::OptTensors>("optimizerTensors"),
                        InstanceMethod<&NativeModel::GetState>("getState"), InstanceMethod<&NativeModel::SetState>("setState"),
                        InstanceMethod<&NativeModel::Train>("train"), InstanceMethod<&NativeModel::Predict>("predict"),
                        InstanceMethod<&NativeModel::Ablate>("ablate"), InstanceMethod<&NativeModel::Gradients>("gradients"),
                        InstanceMethod<&NativeModel::Cancel>("cancel"), InstanceMethod<&NativeModel::CopyFrom>("copyFrom")});
    ctor() = Napi::Persistent(f);
    ctor().SuppressDestruct();
    return f;
  }

  explicit NativeModel(const Napi::CallbackInfo& info) : Napi::ObjectWrap<NativeModel>(info) {
    Napi::Env env = info.Env();
    Napi::Object c = info[0].As<Napi::Object>();
    ModelConfig cfg;
    cfg.num_numeric = (int)num(c, "numNumeric", 0);
    auto v = c.Get("vocab").As<Napi::Array>();
    for (uint32_t i = 0; i < v.Length(); ++i) cfg.vocab.push_back((int64_t)v.Get(i).As<Napi::Number>().DoubleValue());
    cfg.dim = (int)num(c, "dim", 16);
    cfg.mean = c.Get("pooling").As<Napi::String>().Utf8Value() == "mean";
    cfg.wide = flag(c, "wide", false);
    auto h = c.Get("hidden").As<Napi::Array>();
    for (uint32_t i = 0; i < h.Length(); ++i) cfg.hidden.push_back(h.Get(i).As<Napi::Number>().Int32Value());
    Napi::Object d = c.Get("dense").As<Napi::Object>(), s = c.Get("sparse").As<Napi::Object>();
    cfg.dense = {(float)num(d, "lr", 1e-3), (float)num(d, "beta1", 0.9), (float)num(d, "beta2", 0.999), (float)num(d, "eps", 1e-8), (float)num(d, "weightDecay", 0)};
    cfg.sparse.kind = s.Get("kind").As<Napi::String>().Utf8Value() == "adagrad" ? 0 : 1;
    cfg.sparse.lr = (float)num(s, "lr", 1e-3);
    cfg.sparse.b1 = (float)num(s, "beta1", 0.9);
    cfg.sparse.b2 = (float)num(s, "beta2", 0.999);
    cfg.sparse.eps = (float)num(s, "eps", 1e-8);
    cfg.sparse.init_acc = (float)num(s, "initialAccumulator", 0.1);
    cfg.seed = (uint64_t)num(c, "seed", 0);
    cfg.torch_init = c.Has("init") && c.Get("init").IsString() && c.Get("init").As<Napi::String>().Utf8Value() == "torch";
    cfg.threads = (int)num(c, "threads", 1);
    if (c.Has("cacheLoadFactors") && c.Get("cacheLoadFactors").IsArray()) {
      auto lf = c.Get("cacheLoadFactors").As<Napi::Array>();
      for (uint32_t i = 0; i < lf.Length(); ++i) cfg.cache_load.push_back(lf.Get(i).As<Napi::Number>().DoubleValue());
    }
    try {
      model.reset(new CpuModel(cfg));
    } catch (const std::exception& e) {
      throw Napi::Error::New(env, e.what());
    }
  }

  void check_idle(Napi::Env env) {
    if (busy.load()) throw Napi::Error::New(env, "model is busy with another operation");
  }

  Napi::Value views(const Napi::CallbackInfo& info, std::vector<Tensor>& ts) {
    Napi::Env env = info.Env();
    Napi::Array arr = Napi::Array::New(env, ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      const Tensor& t = ts[i];
      Napi::ArrayBuffer ab;
      if (t.size == 0 || t.data == nullptr) {
        // An external buffer over no memory (an empty vector's data() is null) comes back detached:
        // every later view of it throws "Cannot perform Construct on a detached ArrayBuffer".
        ab = Napi::ArrayBuffer::New(env, 0);
      } else {
        // Each view holds a reference to this model so the memory outlives every view.
        auto* keep = new Napi::ObjectReference(Napi::Persistent(Value()));
        ab = Napi::ArrayBuffer::New(env, t.data, t.size * sizeof(float),
                                    [](Napi::Env, void*, Napi::ObjectReference* r) { delete r; }, keep);
      }
      Napi::Object o = Napi::Object::New(env);
      o.Set("name", t.name);
      Napi::Array shape = Napi::Array::New(env, t.shape.size());
      for (size_t k = 0; k < t.shape.size(); ++k) shape.Set((uint32_t)k, (double)t.shape[k]);
      o.Set("shape", shape);
      o.Set("data", Napi::Float32Array::New(env, t.size, ab, 0));
      arr.Set((uint32_t)i, o);
    }
    return arr;
  }
  Napi::Value Tensors(const Napi::CallbackInfo& info) { return views(info, model->params()); }
  Napi::Value OptTensors(const Napi::CallbackInfo& info) { return views(info, model->opt_state()); }

  Napi::Value GetState(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("step", (double)model->step);
    o.Set("normalized", model->normalized);
    Napi::Array fr = Napi::Array::New(env, model->frozen.size());
    for (size_t i = 0; i < model->frozen.size(); ++i) fr.Set((uint32_t)i, (bool)model->frozen[i]);
    o.Set("frozen", fr);
    Napi::Array off = Napi::Array::New(env, model->off.size());
    for (size_t i = 0; i < model->off.size(); ++i) off.Set((uint32_t)i, (bool)model->off[i]);
    o.Set("inputsOff", off);
    o.Set("isa", gemm_isa());
    o.Set("evalPrecision", model->eval_precision());
    o.Set("evalKernel", model->eval_kernel_name());
    o.Set("threads", model->pool().size());
    int64_t cs[5];
    if (model->cache_state(cs)) {
      Napi::Object c = Napi::Object::New(env);
      c.Set("rows", (double)cs[0]);
      c.Set("tableRows", (double)cs[1]);
      c.Set("loads", (double)cs[2]);
      c.Set("writebacks", (double)cs[3]);
      c.Set("hits", (double)cs[4]);
      o.Set("embeddingCache", c);
    }
    return o;
  }
  void SetState(const Napi::CallbackInfo& info) {
    check_idle(info.Env());
    Napi::Object o = info[0].As<Napi::Object>();
    if (o.Has("step")) model->step = (int64_t)num(o, "step", 0);
    if (o.Has("normalized")) model->normalized = flag(o, "normalized", false);
    if (o.Has("frozen")) {
      auto fr = o.Get("frozen").As<Napi::Array>();
      for (uint32_t i = 0; i < fr.Length() && i < model->frozen.size(); ++i) model->frozen[i] = fr.Get(i).ToBoolean().Value();
    }
    if (o.Has("inputsOff")) {
      auto off = o.Get("inputsOff").As<Napi::Array>();
      if (off.Length() != model->off.size())
        throw Napi::TypeError::New(info.Env(), "inputsOff needs " + std::to_string(model->off.size()) + " flags (numeric inputs, then slots)");
      for (uint32_t i = 0; i < off.Length(); ++i) model->off[i] = off.Get(i).ToBoolean().Value();
    }
  }
  // copyFrom(other): every parameter and optimizer value, the step, normalisation and frozen flags of
  // a model of the same configuration (see CpuModel::copy_from)
  void CopyFrom(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    check_idle(env);
    if (info.Length() < 1 || !info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(ctor().Value()))
      throw Napi::TypeError::New(env, "copyFrom needs a model of the same backend");
    NativeModel* other = Napi::ObjectWrap<NativeModel>::Unwrap(info[0].As<Napi::Object>());
    other->check_idle(env);
    try {
      model->copy_from(*other->model);
    } catch (const std::exception& e) {
      throw Napi::Error::New(env, e.what());
    }
  }
  void Cancel(const Napi::CallbackInfo&) { model->cancel.store(true); }

  Napi::Value Train(const Napi::CallbackInfo& info);
  Napi::Value Predict(const Napi::CallbackInfo& info);
  Napi::Value Ablate(const Napi::CallbackInfo& info);
  Napi::Value Gradients(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    check_idle(env);
    DataSource ds = make_source(env, info[0].As<Napi::Object>(), model->config().num_numeric, (int)model->config().vocab.size());
    std::map<std::string, std::vector<float>> grads;
    std::vector<float> logits(ds.rows);
    double loss;
    try {
      check_offsets(ds);
      loss = model->gradients(ds, logits.data(), grads);
    } catch (const std::exception& e) {
      throw Napi::Error::New(env, e.what());
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("loss", loss);
    auto lg = Napi::Float32Array::New(env, logits.size());
    std::copy(logits.begin(), logits.end(), lg.Data());
    o.Set("logits", lg);
    Napi::Object g = Napi::Object::New(env);
    for (auto& kv : grads) {
      auto a = Napi::Float32Array::New(env, kv.second.size());
      std::copy(kv.second.begin(), kv.second.end(), a.Data());
      g.Set(kv.first, a);
    }
    o.Set("grads", g);
    return o;
  }
};

// Base for model operations: holds the data alive, marks the model busy, settles a promise.
class ModelWorker : public Napi::AsyncWorker {
 public:
  ModelWorker(Napi::Env env, NativeModel* m, Napi::Object self, Napi::Object data)
      : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), nm(m) {
    self_ref = Napi::Persistent(self);
    data_ref = Napi::Persistent(data);
    ds = make_source(env, data, m->model->config().num_numeric, (int)m->model->config().vocab.size());
  }
  void begin() {
    nm->busy.store(true);
    nm->model->cancel.store(false);
    Queue();
  }
  void OnError(const Napi::Error& e) override {
    nm->busy.store(false);
    deferred.Reject(e.Value());
  }
  Napi::Promise::Deferred deferred;
  NativeModel* nm;
  Napi::ObjectReference self_ref, data_ref;
  DataSource ds;
};

class TrainWorker : public Napi::AsyncProgressQueueWorker<Progress> {
 public:
  TrainWorker(Napi::Env env, NativeModel* m, Napi::Object self, Napi::Object data, Napi::Value val, TrainOptions o, Napi::Function cb)
      : Napi::AsyncProgressQueueWorker<Progress>(cb), deferred(Napi::Promise::Deferred::New(env)), nm(m), opts(o) {
    self_ref = Napi::Persistent(self);
    data_ref = Napi::Persistent(data);
    const int nn = m->model->config().num_numeric, ns = (int)m->model->config().vocab.size();
    ds = make_source(env, data, nn, ns);
    if (val.IsObject()) {
      val_ref = Napi::Persistent(val.As<Napi::Object>());
      vds.reset(new DataSource(make_source(env, val.As<Napi::Object>(), nn, ns)));
    }
  }
  void Execute(const ExecutionProgress& p) override {
    const double queued = std::chrono::duration<double>(std::chrono::steady_clock::now() - made).count();
    try {
      check_offsets(ds);
      if (vds) check_offsets(*vds);
      res = nm->model->train(ds, vds.get(), opts, [&](const Progress& pr) { p.Send(&pr, 1); });
      res.queued_seconds = queued;
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnProgress(const Progress* data, size_t count) override {
    Napi::Env env = Env();
    if (Callback().IsEmpty()) return;
    for (size_t i = 0; i < count; ++i) {
      const Progress& pr = data[i];
      Napi::Object o = Napi::Object::New(env);
      o.Set("epoch", pr.epoch);
      o.Set("step", (double)pr.step);
      o.Set("totalSteps", (double)pr.total_steps);
      o.Set("loss", pr.loss);
      o.Set("samplesPerSecond", pr.samples_per_s);
      o.Set("epochEnd", pr.epoch_end);
      if (pr.epoch_end) { o.Set("valAuc", pr.val_auc); o.Set("valLogloss", pr.val_logloss); }
      Callback().Call({o});
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    nm->busy.store(false);
    Napi::Object o = Napi::Object::New(env);
    o.Set("steps", (double)res.steps);
    o.Set("samples", (double)res.samples);
    o.Set("epochs", res.epochs);
    o.Set("finalLoss", res.final_loss);
    o.Set("samplesPerSecond", res.samples_per_s);
    o.Set("seconds", res.seconds);
    o.Set("queuedSeconds", res.queued_seconds);
    o.Set("setupSeconds", res.setup_seconds);
    o.Set("evalSeconds", res.eval_seconds);
    o.Set("stoppedEarly", res.stopped_early);
    o.Set("cancelled", res.cancelled);
    o.Set("bestEpoch", res.best_epoch);
    o.Set("bestValAuc", res.best_val_auc);
    o.Set("bestValLogloss", res.best_val_logloss);
    o.Set("trainRows", (double)res.train_rows);
    o.Set("validationRows", (double)res.val_rows);
    if (opts.eval_first) {
      o.Set("initialValAuc", res.initial_val_auc);
      o.Set("initialValLogloss", res.initial_val_logloss);
    }
    Napi::Array h = Napi::Array::New(env, res.history.size());
    for (size_t i = 0; i < res.history.size(); ++i) {
      Napi::Object e = Napi::Object::New(env);
      e.Set("epoch", res.history[i].epoch);
      e.Set("trainLoss", res.history[i].train_loss);
      e.Set("valAuc", res.history[i].val_auc);
      e.Set("valLogloss", res.history[i].val_logloss);
      e.Set("seconds", res.history[i].seconds);
      h.Set((uint32_t)i, e);
    }
    o.Set("history", h);
    deferred.Resolve(o);
  }
  void OnError(const Napi::Error& e) override {
    nm->busy.store(false);
    deferred.Reject(e.Value());
  }
  Napi::Promise::Deferred deferred;
  NativeModel* nm;
  TrainOptions opts;
  TrainResult res;
  // when it was made: the time until Execute is the wait for one of libuv's threads
  std::chrono::steady_clock::time_point made = std::chrono::steady_clock::now();
  Napi::ObjectReference self_ref, data_ref, val_ref;
  DataSource ds;
  std::unique_ptr<DataSource> vds;
};

Napi::Value NativeModel::Train(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  check_idle(env);
  Napi::Object o = info[2].As<Napi::Object>();
  TrainOptions t;
  t.epochs = (int)num(o, "epochs", 1);
  t.batch = (int64_t)num(o, "batchSize", 1024);
  t.shuffle = flag(o, "shuffle", true);
  t.seed = (uint64_t)num(o, "seed", 0);
  t.max_steps = (int64_t)num(o, "maxSteps", -1);
  t.val_fraction = num(o, "validationFraction", 0);
  t.patience = (int)num(o, "patience", 0);
  t.min_delta = num(o, "minDelta", 0);
  t.es_on_logloss = o.Has("monitor") && o.Get("monitor").ToString().Utf8Value() == "logloss";
  t.restore_best = flag(o, "restoreBest", true);
  t.progress_every = (int)num(o, "progressEvery", 50);
  t.eval_first = flag(o, "evaluateFirst", false);
  Napi::Function cb = info[3].IsFunction() ? info[3].As<Napi::Function>() : Napi::Function::New(env, [](const Napi::CallbackInfo&) {});
  auto* w = new TrainWorker(env, this, Value(), info[0].As<Napi::Object>(), info[1], t, cb);
  busy.store(true);
  model->cancel.store(false);
  w->Queue();
  return w->deferred.Promise();
}

class PredictWorker : public ModelWorker {
 public:
  using ModelWorker::ModelWorker;
  int64_t batch = 8192;
  bool metrics = false;  // also the metrics (exact_metrics), computed here
  double met[5] = {0, 0, 0, 0, 0};
  std::vector<float> pred, label, weight;
  std::vector<int32_t> key;
  void Execute() override {
    try {
      check_offsets(ds);
      pred.resize(ds.rows);
      label.resize(ds.rows);
      weight.resize(ds.rows);
      key.resize(ds.rows);
      nm->model->predict(ds, batch, pred.data(), label.data(), weight.data(), key.data());
      if (metrics) exact_metrics(pred.data(), label.data(), ds.has_weights() ? weight.data() : nullptr, ds.rows, met);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    nm->busy.store(false);
    Napi::Object o = Napi::Object::New(env);
    if (metrics) set_metrics(env, o, met);
    auto put = [&](const char* k, const std::vector<float>& v) {
      auto a = Napi::Float32Array::New(env, v.size());
      std::copy(v.begin(), v.end(), a.Data());
      o.Set(k, a);
    };
    put("predictions", pred);
    put("labels", label);
    if (ds.has_weights()) put("weights", weight);
    if (ds.has_key()) {
      auto a = Napi::Int32Array::New(env, key.size());
      std::copy(key.begin(), key.end(), a.Data());
      o.Set("key", a);
    }
    deferred.Resolve(o);
  }
};

Napi::Value NativeModel::Predict(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  check_idle(env);
  auto* w = new PredictWorker(env, this, Value(), info[0].As<Napi::Object>());
  if (info.Length() > 1 && info[1].IsNumber()) w->batch = std::max<int64_t>(1, info[1].As<Napi::Number>().Int64Value());
  if (info.Length() > 2 && info[2].IsBoolean()) w->metrics = info[2].As<Napi::Boolean>().Value();
  w->begin();
  return w->deferred.Promise();
}

class AblateWorker : public ModelWorker {
 public:
  using ModelWorker::ModelWorker;
  std::vector<AblationGroup> groups;
  int repeats = 1;
  uint64_t seed = 0;
  int64_t batch = 8192;
  Metrics base;
  std::vector<Metrics> out, base_folds, out_folds;
  void Execute() override {
    try {
      check_offsets(ds);
      nm->model->ablate(ds, groups, repeats, seed, batch, base, out, &base_folds, &out_folds);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    nm->busy.store(false);
    // one packed array (a few thousand N-API property sets for 78 configurations x 10 folds cost
    // milliseconds): [1, permuted, baseFolds, permutedFolds] counts, then 5 values per metric set
    // (auc, logloss, calibration, meanPrediction, meanLabel) in that order; unpacked in JS
    const size_t total = 1 + out.size() + base_folds.size() + out_folds.size();
    Napi::Float64Array a = Napi::Float64Array::New(env, 4 + 5 * total);
    double* d = a.Data();
    d[0] = 1;
    d[1] = (double)out.size();
    d[2] = (double)base_folds.size();
    d[3] = (double)out_folds.size();
    size_t q = 4;
    auto put = [&](const Metrics& m) {
      d[q++] = m.auc;
      d[q++] = m.logloss;
      d[q++] = m.calibration;
      d[q++] = m.mean_pred;
      d[q++] = m.mean_label;
    };
    put(base);
    for (auto& m : out) put(m);
    for (auto& m : base_folds) put(m);
    for (auto& m : out_folds) put(m);
    Napi::Object o = Napi::Object::New(env);
    o.Set("packed", a);
    deferred.Resolve(o);
  }
};

Napi::Value NativeModel::Ablate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  check_idle(env);
  auto* w = new AblateWorker(env, this, Value(), info[0].As<Napi::Object>());
  Napi::Object o = info[1].As<Napi::Object>();
  auto gs = o.Get("groups").As<Napi::Array>();
  const int N = model->config().num_numeric, S = (int)model->config().vocab.size();
  for (uint32_t i = 0; i < gs.Length(); ++i) {
    Napi::Object g = gs.Get(i).As<Napi::Object>();
    AblationGroup ag;
    auto nums = g.Get("numeric").As<Napi::Array>(), slots = g.Get("slots").As<Napi::Array>();
    for (uint32_t k = 0; k < nums.Length(); ++k) {
      int j = nums.Get(k).As<Napi::Number>().Int32Value();
      if (j < 0 || j >= N) { delete w; throw Napi::RangeError::New(env, "numeric index out of range"); }
      ag.numeric.push_back(j);
    }
    for (uint32_t k = 0; k < slots.Length(); ++k) {
      int s = slots.Get(k).As<Napi::Number>().Int32Value();
      if (s < 0 || s >= S) { delete w; throw Napi::RangeError::New(env, "slot index out of range"); }
      ag.slots.push_back(s);
    }
    w->groups.push_back(ag);
  }
  w->repeats = std::max(1, (int)num(o, "repeats", 1));
  w->seed = (uint64_t)num(o, "seed", 0);
  w->batch = std::max<int64_t>(1, (int64_t)num(o, "batchSize", 8192));
  w->begin();
  return w->deferred.Promise();
}

class OpenShardWorker : public Napi::AsyncWorker {
 public:
  OpenShardWorker(Napi::Env env, std::string p, bool v) : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), path(std::move(p)), verify(v) {}
  void Execute() override {
    try {
      shard = std::make_shared<MappedShard>(path, verify);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override {
    Napi::Env env = Env();
    auto ext = Napi::External<std::shared_ptr<MappedShard>>::New(env, &shard);
    deferred.Resolve(ShardHandle::ctor.New({ext}));
  }
  void OnError(const Napi::Error& e) override { deferred.Reject(e.Value()); }
  Napi::Promise::Deferred deferred;
  std::string path;
  bool verify;
  std::shared_ptr<MappedShard> shard;
};

Napi::Value OpenShard(const Napi::CallbackInfo& info) {
  auto* w = new OpenShardWorker(info.Env(), info[0].As<Napi::String>().Utf8Value(), info.Length() < 2 || info[1].ToBoolean().Value());
  w->Queue();
  return w->deferred.Promise();
}

class WriteShardWorker : public Napi::AsyncWorker {
 public:
  WriteShardWorker(Napi::Env env, Napi::Object sections_owner)
      : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)) {
    keep = Napi::Persistent(sections_owner);
  }
  void Execute() override {
    try {
      write_shard(path, rows, json, sections);
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  void OnOK() override { deferred.Resolve(Env().Undefined()); }
  void OnError(const Napi::Error& e) override { deferred.Reject(e.Value()); }
  Napi::Promise::Deferred deferred;
  Napi::ObjectReference keep;
  std::string path, json;
  uint64_t rows = 0;
  std::vector<SectionData> sections;
};

// writeShard(path, rows, json, [{kind, index, data: TypedArray}]) -> Promise<void>
Napi::Value WriteShard(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto arr = info[3].As<Napi::Array>();
  auto* w = new WriteShardWorker(env, arr);
  w->path = info[0].As<Napi::String>().Utf8Value();
  w->rows = (uint64_t)info[1].As<Napi::Number>().Int64Value();
  w->json = info[2].As<Napi::String>().Utf8Value();
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Object s = arr.Get(i).As<Napi::Object>();
    auto ta = s.Get("data").As<Napi::TypedArray>();
    w->sections.push_back({(uint32_t)num(s, "kind", 0), (uint32_t)num(s, "index", 0),
                           static_cast<const char*>(ta.ArrayBuffer().Data()) + ta.ByteOffset(), ta.ByteLength()});
  }
  w->Queue();
  return w->deferred.Promise();
}

// gather(data, numNumeric, numSlots, rows?) -> Promise<{ numeric, labels, weights?, key?, offs[], ids[] }>:
// the rows (all, in order, or the given indices) copied into arrays in the model's column order; the
// arrays' memory is handed to JS without a second copy. Mapped pages are released as it goes.
class GatherWorker : public Napi::AsyncWorker {
 public:
  GatherWorker(Napi::Env env, DataSource src, Napi::Object owner)
      : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)), ds(std::move(src)) {
    keep = Napi::Persistent(owner);
  }
  // Rows are read in the data's own order, whatever order they are asked in (a sample, folds laid
  // out one after another): two passes over the rows sorted by source row (the ids' counts, then
  // everything), each releasing a part's mapped pages once it has passed it. Taking a sample in the
  // asked order instead maps pages all over the set (and the page cache's neighbours with each) between
  // releases: at a 2M-row sample of 8M rows, most of the split's pages at once.
  void Execute() override {
    try {
      const int64_t n = rows.empty() ? ds.rows : (int64_t)rows.size();
      const int N = (int)ds.num_map.size();
      const size_t S = (size_t)num_slots;
      for (int64_t i = 0; i < (int64_t)rows.size(); ++i)
        if (rows[i] < 0 || rows[i] >= ds.rows)
          throw std::runtime_error("gather: row " + std::to_string(rows[i]) + " is outside the " + std::to_string(ds.rows) + " rows");
      // output positions in the order of their source rows (ties: in the asked order)
      std::vector<int64_t> by_src;
      if (!rows.empty()) {
        by_src.resize(n);
        for (int64_t i = 0; i < n; ++i) by_src[i] = i;
        if (!std::is_sorted(rows.begin(), rows.end()))
          std::stable_sort(by_src.begin(), by_src.end(), [&](int64_t a, int64_t b) { return rows[a] < rows[b]; });
      }
      // visits every output position k with its source part and row, in source order; the pages of
      // a part are released once the visit has left it
      auto visit = [&](auto&& fn) {
        size_t at_part = SIZE_MAX;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t k = rows.empty() ? j : by_src[j];
          const int64_t g = rows.empty() ? j : rows[k];
          int64_t local;
          const DataPart& p = ds.locate(g, local);
          const size_t pi = (size_t)(&p - ds.parts.data());
          if (ds.mapped() && at_part != SIZE_MAX && pi != at_part) ds.release_part(at_part);
          at_part = pi;
          fn(k, p, local);
          // a long run inside one part: its pages behind are released now and then too
          if (ds.mapped() && (j + 1) % kReleaseEvery == 0) ds.release_part(pi);
        }
        if (ds.mapped()) ds.release();
      };
      numeric = new std::vector<float>((size_t)n * N);
      labels = new std::vector<float>(n);
      if (ds.has_weights()) weights = new std::vector<float>(n);
      if (ds.has_key()) key = new std::vector<int32_t>(n);
      for (size_t s = 0; s < S; ++s) {
        offs.push_back(new std::vector<int32_t>(n + 1, 0));
        ids.push_back(new std::vector<int32_t>());
      }
      if (S) {
        // each output row's count of ids, then their starts (in output order)
        visit([&](int64_t k, const DataPart& p, int64_t local) {
          for (size_t s = 0; s < S; ++s) (*offs[s])[k + 1] = p.offs[s][local + 1] - p.offs[s][local];
        });
        for (size_t s = 0; s < S; ++s) {
          auto& o = *offs[s];
          int64_t total = 0;
          for (int64_t i = 0; i < n; ++i) {
            total += o[i + 1];
            if (total > (int64_t)INT32_MAX) throw std::runtime_error("gather: more than 2^31 ids in a slot");
            o[i + 1] = (int32_t)total;
          }
          ids[s]->resize((size_t)total);
        }
      }
      visit([&](int64_t k, const DataPart& p, int64_t local) {
        for (int j = 0; j < N; ++j) (*numeric)[(size_t)k * N + j] = p.numeric[local * p.num_stride + ds.num_map[j]];
        (*labels)[k] = p.labels[local];
        if (weights) (*weights)[k] = p.weights[local];
        if (key) (*key)[k] = p.key[local];
        for (size_t s = 0; s < S; ++s) {
          const int32_t* o = p.offs[s];
          std::copy(p.ids[s] + o[local], p.ids[s] + o[local + 1], ids[s]->data() + (*offs[s])[k]);
        }
      });
    } catch (const std::exception& e) {
      SetError(e.what());
    }
  }
  template <class T, class A>
  static A hand_over(Napi::Env env, std::vector<T>*& v) {
    std::vector<T>* owned = v;
    v = nullptr;
    const size_t n = owned->size();
    if (n == 0) owned->push_back(T{});  // an empty external buffer would read as detached: keep one element behind
    auto buf = Napi::ArrayBuffer::New(env, owned->data(), owned->size() * sizeof(T),
                                      [](Napi::Env, void*, std::vector<T>* o) { delete o; }, owned);
    return A::New(env, n, buf, 0);
  }
  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("numeric", hand_over<float, Napi::Float32Array>(env, numeric));
    o.Set("labels", hand_over<float, Napi::Float32Array>(env, labels));
    if (weights) o.Set("weights", hand_over<float, Napi::Float32Array>(env, weights));
    if (key) o.Set("key", hand_over<int32_t, Napi::Int32Array>(env, key));
    Napi::Array oa = Napi::Array::New(env, offs.size()), ia = Napi::Array::New(env, ids.size());
    for (size_t s = 0; s < offs.size(); ++s) {
      oa.Set((uint32_t)s, hand_over<int32_t, Napi::Int32Array>(env, offs[s]));
      ia.Set((uint32_t)s, hand_over<int32_t, Napi::Int32Array>(env, ids[s]));
    }
    o.Set("offs", oa);
    o.Set("ids", ia);
    deferred.Resolve(o);
  }
  void OnError(const Napi::Error& e) override { deferred.Reject(e.Value()); }
  ~GatherWorker() override {
    delete numeric;
    delete labels;
    delete weights;
    delete key;
    for (auto* v : offs) delete v;
    for (auto* v : ids) delete v;
  }
  Napi::Promise::Deferred deferred;
  Napi::ObjectReference keep;
  DataSource ds;
  std::vector<int64_t> rows;
  int num_slots = 0;
  std::vector<float>*numeric = nullptr, *labels = nullptr, *weights = nullptr;
  std::vector<int32_t>* key = nullptr;
  std::vector<std::vector<int32_t>*> offs, ids;
};

Napi::Value Gather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object d = info[0].As<Napi::Object>();
  DataSource src = make_source(env, d, info[1].As<Napi::Number>().Int32Value(), info[2].As<Napi::Number>().Int32Value());
  auto* w = new GatherWorker(env, std::move(src), d);
  w->num_slots = info[2].As<Napi::Number>().Int32Value();
  if (info.Length() > 3 && info[3].IsTypedArray()) {
    auto a = info[3].As<Napi::Int32Array>();
    w->rows.assign(a.Data(), a.Data() + a.ElementLength());
  }
  w->Queue();
  return w->deferred.Promise();
}

// The stages the CUDA backend's host-streamed steps would copy for one epoch of training rows
// (packBatches(data, numNumeric, numSlots, trainRows, {shuffle, seed, epoch, epochs, batch, records})):
// the used bytes of every batch's stage, one after another, for epochs [epoch, epoch + epochs).
// Windowed as the CUDA backend is when the data is mapped; `records` packs from the row-major window
// copies, otherwise from the columns; `raw` copies the records as they are (RecordStream::pack_raw)
// and unpacks them as the device does (unpack_raw); `columns` copies each window column by column (as
// the device holds it) and gathers each batch's rows where ColumnStream::pack_positions says they are
// (gather_windows, the device's gather on the host). For tests of the packers (all must give the same
// bytes).
Napi::Value PackBatches(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int nn = info[1].As<Napi::Number>().Int32Value(), ns = info[2].As<Napi::Number>().Int32Value();
  DataSource ds = make_source(env, info[0].As<Napi::Object>(), nn, ns);
  auto tr = info[3].As<Napi::Float64Array>();
  std::vector<int64_t> rows(tr.ElementLength());
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i] = (int64_t)tr[i];
    if (rows[i] < 0 || rows[i] >= ds.rows) throw Napi::RangeError::New(env, "trainRows: row " + std::to_string(rows[i]) + " is outside the data");
  }
  Napi::Object o = info[4].As<Napi::Object>();
  const bool shuffle = o.Get("shuffle").ToBoolean(), raw = o.Has("raw") && o.Get("raw").ToBoolean();
  const bool columns = o.Has("columns") && o.Get("columns").ToBoolean();
  const bool rec = raw || o.Get("records").ToBoolean();
  const uint64_t seed = (uint64_t)o.Get("seed").ToNumber().Int64Value();
  const int ep = o.Get("epoch").ToNumber().Int32Value();
  const int64_t batch = o.Get("batch").ToNumber().Int64Value(), n = (int64_t)rows.size();
  if (batch < 1) throw Napi::RangeError::New(env, "batch: must be at least 1");
  if ((rec || columns) && !RecordStream::fits(batch)) throw Napi::RangeError::New(env, "batch: too large to take from windows");
  int mb = 0;
  for (auto& p : ds.parts)
    for (int s = 0; s < ns; ++s)
      for (int64_t r = 0; r < p.rows; ++r) mb = std::max(mb, p.offs[s][r + 1] - p.offs[s][r]);
  const StageLayout L = stage_layout(std::min(batch, std::max<int64_t>(n, 1)), nn, ns, mb, ds.has_weights());
  const RawLayout RL = raw_layout(std::min(batch, std::max<int64_t>(n, 1)), nn, ns, mb, ds.has_weights());
  std::vector<uint8_t> pin(L.cap), rawpin(raw ? RL.cap : 0), out;
  std::vector<int64_t> idx;
  int64_t batch_no = 0;
  std::vector<int64_t> order, ends, base;
  ThreadPool tp(4);
  const bool windowed = ds.mapped();
  const int epochs = o.Has("epochs") ? o.Get("epochs").ToNumber().Int32Value() : 1;
  std::unique_ptr<RecordStream> rs;
  if (rec) rs.reset(new RecordStream(ds, rows, shuffle, windowed, seed, ep + epochs, nn, ns, 3, 4));
  std::unique_ptr<ColumnStream> cs;
  const int64_t stride = (windowed ? std::min(n, kWindowRows) : n) + 1;  // a window's rows at most, and its end
  if (columns) cs.reset(new ColumnStream(ds, rows, shuffle, windowed, seed, ep + epochs, nn, ns, 3, 1, ColumnStream::kMaxSlots));
  for (int e = ep; e < ep + epochs; ++e) {
    epoch_order(rows, shuffle, windowed, seed, e, order, ends);
    if (rs) rs->start_epoch(e);
    if (cs) cs->start_epoch(e);
    for (int64_t b0 = 0; b0 < n; b0 += batch) {
      const int64_t B = std::min(batch, n - b0);
      std::fill(pin.begin(), pin.end(), 0);
      size_t bytes;
      if (raw) {
        std::fill(rawpin.begin(), rawpin.end(), 0);
        rs->pack_raw(b0, B, RL, rawpin.data());
        bytes = unpack_raw(rawpin.data(), RL, B, nn, ns, ds.has_weights(), L, pin.data());
      } else if (columns) {
        // where each row is in the two windows' columns (as the device holds them), gathered from
        // there as the device's step does
        idx.resize(B);
        cs->pack_positions(b0, B, batch_no++, stride, idx.data(), false);
        const WindowColumns* w[ColumnStream::kMaxSlots] = {&cs->slot_window(0), &cs->slot_window(1), &cs->slot_window(2)};
        bytes = gather_windows(w, stride, idx.data(), B, nn, ns, ds.has_weights(), L, pin.data());
        cs->copy_next();
      } else {
        bytes = rs ? rs->pack(b0, B, L, pin.data(), base) : pack_rows(tp, ds, order.data() + b0, B, nn, ns, L, pin.data(), base);
      }
      out.insert(out.end(), pin.begin(), pin.begin() + bytes);
    }
  }
  return Napi::Buffer<uint8_t>::Copy(env, out.data(), out.size());
}

Napi::Value CpuInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  __builtin_cpu_init();
  Napi::Object o = Napi::Object::New(env);
  o.Set("avx2", (bool)__builtin_cpu_supports("avx2"));
  o.Set("avx512f", (bool)__builtin_cpu_supports("avx512f"));
  o.Set("gemm", gemm_isa());
  o.Set("avx512bf16", bf16_cpu_supported());
  o.Set("amxBf16", amx_cpu_supported());
  o.Set("vendorAmd", (bool)__builtin_cpu_is("amd"));
  o.Set("evalPrecision", bf16_eval_enabled() ? "bf16" : "fp32");
  o.Set("evalKernel", eval_precision_name());
  o.Set("hardwareThreads", (double)std::thread::hardware_concurrency());
  return o;
}


// pairedSeedBootstrap(labels, predsA[], predsB[], replicates, seed, threads) -> Promise<Float64Array>:
// the K per-seed AUC(B_k) - AUC(A_k) on every row once, then per bootstrap replicate the mean over k of
// that difference with the rows weighted by the replicate's resampling counts (NaN where a class has
// no weight). Each model's scores are ranked by (score, row) with groups of equal scores, as
// stats/weighted-auc.ts ranks them (no NaN scores: the caller ranks those in JS). The resampling is the
// JS Prng's (xoshiro128** seeded by splitmix32), n draws a replicate in order, and the sums are JS's
// (doubles, in the same order, nothing fused), so every number is bit for bit what the JS loop gives.
// The models are ranked and the replicates bootstrapped on `threads` threads (replicates in blocks,
// each thread skipping the draws of the replicates before its block).
struct JsPrng {
  uint32_t s[4];
  explicit JsPrng(uint32_t seed) {
    uint32_t x = seed ? seed : 0x9e3779b9u;
    for (int i = 0; i < 4; ++i) {
      x += 0x9e3779b9u;
      uint32_t z = x;
      z = (z ^ (z >> 16)) * 0x85ebca6bu;
      z = (z ^ (z >> 13)) * 0xc2b2ae35u;
      s[i] = z ^ (z >> 16);
    }
  }
  static uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
  uint32_t next_u32() {
    const uint32_t result = rotl(s[1] * 5u, 7) * 9u;
    const uint32_t t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }
};

struct Ranked {
  std::vector<uint32_t> order;
  std::vector<uint32_t> ties;  // starts of the groups of equal scores, then n
};

Ranked rank_scores(const float* s, uint32_t n) {
  Ranked r;
  r.order.resize(n);
  for (uint32_t i = 0; i < n; ++i) r.order[i] = i;
  std::sort(r.order.begin(), r.order.end(), [s](uint32_t a, uint32_t b) { return s[a] < s[b] || (s[a] == s[b] && a < b); });
  for (uint32_t i = 0; i < n; ++i)
    if (i == 0 || s[r.order[i]] != s[r.order[i - 1]]) r.ties.push_back(i);
  r.ties.push_back(n);
  return r;
}

__attribute__((optimize("fp-contract=off"))) double weighted_auc(const Ranked& r, const float* labels, const uint16_t* w) {
  double neg_below = 0, num = 0, pos = 0, neg = 0;
  const size_t groups = r.ties.size() - 1;
  for (size_t g = 0; g < groups; ++g) {
    double gp = 0, gn = 0;
    for (uint32_t k = r.ties[g]; k < r.ties[g + 1]; ++k) {
      const uint32_t i = r.order[k];
      if (labels[i] > 0.5f) gp += w[i];
      else gn += w[i];
    }
    const double half = 0.5 * gn;
    const double below = neg_below + half;
    const double term = gp * below;
    num += term;
    neg_below += gn;
    pos += gp;
    neg += gn;
  }
  if (!(pos > 0 && neg > 0)) return std::numeric_limits<double>::quiet_NaN();
  const double pn = pos * neg;
  return num / pn;
}

class BootstrapWorker : public Napi::AsyncWorker {
 public:
  BootstrapWorker(Napi::Env env, Napi::Object keep_these) : Napi::AsyncWorker(env), deferred(Napi::Promise::Deferred::New(env)) {
    keep = Napi::Persistent(keep_these);
  }
  // runs fn(t) for t in [0, T) on T threads (this one included); the first error is rethrown
  template <class F>
  static void on_threads(int T, F fn) {
    std::vector<std::thread> pool;
    std::vector<std::string> errors(T);
    auto guarded = [&](int t) {
      try {
        fn(t);
      } catch (const std::exception& ex) {
        errors[t] = ex.what();
      }
    };
    for (int t = 1; t < T; ++t) pool.emplace_back(guarded, t);
    guarded(0);
    for (auto& th : pool) th.join();
    for (auto& m : errors)
      if (!m.empty()) throw std::runtime_error(m);
  }
  __attribute__((optimize("fp-contract=off"))) void Execute() override {
    try {
      const size_t K = a_scores.size();
      a.resize(K);
      bb.resize(K);
      // the 2K rankings, dealt to the threads
      const int TR = std::max(1, std::min<int>(threads, (int)(2 * K)));
      on_threads(TR, [&](int t) {
        for (size_t m = (size_t)t; m < 2 * K; m += (size_t)TR)
          (m < K ? a[m] : bb[m - K]) = rank_scores(m < K ? a_scores[m] : b_scores[m - K], (uint32_t)n);
      });
      out.assign(K + (size_t)replicates, 0.0);
      std::vector<uint16_t> ones(n, 1);
      for (size_t k = 0; k < K; ++k) out[k] = weighted_auc(bb[k], labels, ones.data()) - weighted_auc(a[k], labels, ones.data());
      const int T = std::max(1, std::min(threads, replicates));
      on_threads(T, [&](int t) {
        int64_t b, e;
        ThreadPool::range(replicates, t, T, b, e);
        if (b >= e) return;
        JsPrng rng(seed);
        for (int64_t r = 0; r < b; ++r)
          for (int64_t i = 0; i < n; ++i) rng.next_u32();
        std::vector<uint16_t> w(n);
        const double dn = (double)n;
        for (int64_t r = b; r < e; ++r) {
          std::fill(w.begin(), w.end(), 0);
          for (int64_t i = 0; i < n; ++i) {
            const double u = (double)rng.next_u32() * 2.3283064365386963e-10;
            const double x = std::floor(u * dn);
            const int64_t j = std::min<int64_t>(n - 1, (int64_t)x);
            w[j] = (uint16_t)(w[j] + 1);
          }
          double sum = 0;
          for (size_t k = 0; k < K; ++k) {
            const double d = weighted_auc(bb[k], labels, w.data()) - weighted_auc(a[k], labels, w.data());
            sum += d;
          }
          out[K + (size_t)r] = sum / (double)K;
        }
      });
    } catch (const std::exception& ex) {
      SetError(ex.what());
    }
  }
  void OnOK() override {
    auto buf = Napi::ArrayBuffer::New(Env(), out.size() * sizeof(double));
    std::memcpy(buf.Data(), out.data(), out.size() * sizeof(double));
    deferred.Resolve(Napi::Float64Array::New(Env(), out.size(), buf, 0));
  }
  void OnError(const Napi::Error& e) override { deferred.Reject(e.Value()); }
  Napi::Promise::Deferred deferred;
  Napi::ObjectReference keep;
  const float* labels = nullptr;
  int64_t n = 0;
  std::vector<const float*> a_scores, b_scores;
  std::vector<Ranked> a, bb;
  int replicates = 0;
  uint32_t seed = 0;
  int threads = 1;
  std::vector<double> out;
};

Napi::Value PairedSeedBootstrap(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto labels = info[0].As<Napi::Float32Array>();
  const int64_t n = (int64_t)labels.ElementLength();
  if (n >= (int64_t)UINT32_MAX) throw Napi::Error::New(env, "pairedSeedBootstrap: too many rows");
  Napi::Object keep = Napi::Object::New(env);
  keep.Set("labels", labels);
  std::vector<const float*> sides[2];
  for (int s = 0; s < 2; ++s) {
    auto preds = info[1 + s].As<Napi::Array>();
    keep.Set(s ? "b" : "a", preds);
    for (uint32_t k = 0; k < preds.Length(); ++k) {
      auto p = preds.Get(k).As<Napi::Float32Array>();
      if ((int64_t)p.ElementLength() != n) throw Napi::Error::New(env, "pairedSeedBootstrap: predictions and labels differ in length");
      sides[s].push_back(p.Data());
    }
  }
  if (sides[0].empty() || sides[0].size() != sides[1].size())
    throw Napi::Error::New(env, "pairedSeedBootstrap: need the same number of seeds on both sides");
  auto* w = new BootstrapWorker(env, keep);
  w->labels = labels.Data();
  w->n = n;
  w->a_scores = std::move(sides[0]);
  w->b_scores = std::move(sides[1]);
  w->replicates = info[3].As<Napi::Number>().Int32Value();
  w->seed = info[4].As<Napi::Number>().Uint32Value();
  w->threads = info[5].As<Napi::Number>().Int32Value();
  w->Queue();
  return w->deferred.Promise();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    throw Napi::Error::New(env, "abacus_runtime needs a CPU with AVX2 and FMA");
  exports.Set("NativeModel", NativeModel::Init(env));
  exports.Set("ShardHandle", ShardHandle::Init(env));
  exports.Set("openShard", Napi::Function::New(env, OpenShard));
  exports.Set("writeShard", Napi::Function::New(env, WriteShard));
  exports.Set("gather", Napi::Function::New(env, Gather));
  exports.Set("cpuInfo", Napi::Function::New(env, CpuInfo));
  exports.Set("packBatches", Napi::Function::New(env, PackBatches));
  exports.Set("pairedSeedBootstrap", Napi::Function::New(env, PairedSeedBootstrap));
  exports.Set("backend", "cpu");
  return exports;
}

}  // namespace

NODE_API_MODULE(abacus_runtime, Init)
