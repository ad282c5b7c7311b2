// CUPTI activity trace of a region (bench and diagnostics): how many kernel launches and CUDA
// graph launches the host issued, which kernels the GPU executed and for how long, memcpy and
// memset operations. CUPTI is loaded at run time (dlopen), like cuBLASLt: the addon links nothing
// new and runs where CUPTI is absent (traceStart then reports why it is unavailable).
#include "cupti_trace.h"

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace abacus {
namespace {

struct CuptiApi {
  void* lib = nullptr;
  std::string error;
  CUptiResult (*registerCallbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flushAll)(uint32_t) = nullptr;
  CUptiResult (*nextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*callbackName)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
};

CuptiApi& api() {
  static CuptiApi a;
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> names;
    if (const char* e = std::getenv("ABACUS_CUPTI")) names.push_back(e);
    for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) names.push_back(n);
    for (const char* home : {(const char*)std::getenv("CUDA_HOME"), "/usr/local/cuda"}) {
      if (!home) continue;
      for (const char* sub : {"/extras/CUPTI/lib64/libcupti.so", "/lib64/libcupti.so", "/lib/libcupti.so"})
        names.push_back(std::string(home) + sub);
    }
    for (auto& n : names)
      if ((a.lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!a.lib) {
      a.error = "CUPTI not found (libcupti.so.13; set ABACUS_CUPTI=/path/to/libcupti.so)";
      return;
    }
    auto sym = [&](const char* s) { return dlsym(a.lib, s); };
    a.registerCallbacks = reinterpret_cast<decltype(a.registerCallbacks)>(sym("cuptiActivityRegisterCallbacks"));
    a.enable = reinterpret_cast<decltype(a.enable)>(sym("cuptiActivityEnable"));
    a.disable = reinterpret_cast<decltype(a.disable)>(sym("cuptiActivityDisable"));
    a.flushAll = reinterpret_cast<decltype(a.flushAll)>(sym("cuptiActivityFlushAll"));
    a.nextRecord = reinterpret_cast<decltype(a.nextRecord)>(sym("cuptiActivityGetNextRecord"));
    a.callbackName = reinterpret_cast<decltype(a.callbackName)>(sym("cuptiGetCallbackName"));
    if (!a.registerCallbacks || !a.enable || !a.disable || !a.flushAll || !a.nextRecord || !a.callbackName) {
      a.error = "CUPTI library lacks the activity API";
      a.lib = nullptr;
    }
  });
  return a;
}

struct KernelAgg {
  int64_t count = 0;
  uint64_t ns = 0;
};

struct TraceState {
  std::mutex mu;
  bool active = false;
  bool registered = false;
  int64_t api_kernel_launches = 0, api_graph_launches = 0, api_memcpy = 0, api_sync = 0, api_other = 0;
  int64_t kernels = 0, memcpys = 0, memsets = 0;
  uint64_t first_start = UINT64_MAX, last_end = 0, kernel_ns = 0;
  uint64_t memcpy_bytes = 0, memcpy_ns = 0;
  std::map<std::string, KernelAgg> by_name;
  std::map<std::string, int64_t> api_names;
};
TraceState g;

constexpr size_t kBuf = 8 << 20;

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBuf));
  *size = kBuf;
  *max_records = 0;
}

std::string demangle(const char* n) {
  if (!n) return "?";
  int st = 0;
  char* d = abi::__cxa_demangle(n, nullptr, nullptr, &st);
  std::string s = st == 0 && d ? d : n;
  std::free(d);
  // template arguments and parameter lists make the table unreadable: keep the name
  const size_t par = s.find('(');
  if (par != std::string::npos) s = s.substr(0, par);
  return s;
}

void classify_api(CUpti_CallbackDomain dom, uint32_t cbid) {
  const char* name = nullptr;
  if (api().callbackName(dom, cbid, &name) != CUPTI_SUCCESS || !name) name = "?";
  std::string s(name);
  g.api_names[s]++;
  if (s.find("GraphLaunch") != std::string::npos)
    g.api_graph_launches++;
  else if (s.find("LaunchKernel") != std::string::npos || s.find("LaunchCooperativeKernel") != std::string::npos ||
           s.find("LaunchHostFunc") != std::string::npos)
    g.api_kernel_launches++;
  else if (s.find("Memcpy") != std::string::npos || s.find("Memset") != std::string::npos)
    g.api_memcpy++;
  else if (s.find("Synchronize") != std::string::npos)
    g.api_sync++;
  else
    g.api_other++;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lk(g.mu);
  CUpti_Activity* rec = nullptr;
  while (valid && api().nextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (!g.active) continue;  // records of an earlier region flushed late
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
        g.kernels++;
        const uint64_t d = k->end - k->start;
        g.kernel_ns += d;
        g.first_start = std::min<uint64_t>(g.first_start, k->start);
        g.last_end = std::max<uint64_t>(g.last_end, k->end);
        auto& a = g.by_name[demangle(k->name)];
        a.count++;
        a.ns += d;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(rec);
        g.memcpys++;
        g.memcpy_bytes += m->bytes;
        g.memcpy_ns += m->end - m->start;
        g.first_start = std::min<uint64_t>(g.first_start, m->start);
        g.last_end = std::max<uint64_t>(g.last_end, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET:
        g.memsets++;
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
        classify_api(CUPTI_CB_DOMAIN_RUNTIME_API, reinterpret_cast<CUpti_ActivityAPI*>(rec)->cbid);
        break;
      case CUPTI_ACTIVITY_KIND_DRIVER:
        classify_api(CUPTI_CB_DOMAIN_DRIVER_API, reinterpret_cast<CUpti_ActivityAPI*>(rec)->cbid);
        break;
      default:
        break;
    }
  }
  std::free(buffer);
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                     CUPTI_ACTIVITY_KIND_DRIVER};

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if ((unsigned char)c >= 0x20) o += c;
  }
  return o;
}

}  // namespace

std::string cupti_trace_start() {
  CuptiApi& a = api();
  cudaDeviceSynchronize();
  // ABACUS_CUDA_PROFILER_RANGE=1: also open the profiler range (ncu --profile-from-start off), which
  // works where CUPTI activity is taken by the profiler itself
  if (std::getenv("ABACUS_CUDA_PROFILER_RANGE")) cudaProfilerStart();
  if (!a.lib) return a.error;
  std::unique_lock<std::mutex> lk(g.mu);
  if (!g.registered) {
    if (a.registerCallbacks(on_request, on_complete) != CUPTI_SUCCESS) return "cuptiActivityRegisterCallbacks failed";
    g.registered = true;
  }
  g.active = false;
  lk.unlock();
  a.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // drop whatever an earlier region left
  lk.lock();
  g.api_kernel_launches = g.api_graph_launches = g.api_memcpy = g.api_sync = g.api_other = 0;
  g.kernels = g.memcpys = g.memsets = 0;
  g.first_start = UINT64_MAX;
  g.last_end = g.kernel_ns = g.memcpy_bytes = g.memcpy_ns = 0;
  g.by_name.clear();
  g.api_names.clear();
  for (auto k : kKinds)
    if (a.enable(k) != CUPTI_SUCCESS) return "cuptiActivityEnable failed";
  g.active = true;
  return "";
}

std::string cupti_trace_stop(int64_t regions) {
  CuptiApi& a = api();
  cudaDeviceSynchronize();
  if (std::getenv("ABACUS_CUDA_PROFILER_RANGE")) cudaProfilerStop();
  if (!a.lib || !g.registered) return std::string("{\"error\":\"") + esc(a.lib ? "trace not started" : a.error) + "\"}";
  for (auto k : kKinds) a.disable(k);
  a.flushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lk(g.mu);
  g.active = false;
  const double R = (double)std::max<int64_t>(1, regions);
  std::vector<std::pair<std::string, KernelAgg>> ks(g.by_name.begin(), g.by_name.end());
  std::sort(ks.begin(), ks.end(), [](auto& x, auto& y) { return x.second.ns > y.second.ns; });
  std::string o = "{";
  char buf[512];
  snprintf(buf, sizeof buf,
           "\"regions\":%lld,\"kernel_launch_calls\":%lld,\"graph_launch_calls\":%lld,\"memcpy_memset_calls\":%lld,"
           "\"sync_calls\":%lld,\"other_api_calls\":%lld,\"kernels_executed\":%lld,\"memcpys\":%lld,\"memsets\":%lld,"
           "\"memcpy_bytes\":%llu,\"memcpy_ns\":%llu,\"kernel_time_ns\":%llu,\"span_ns\":%llu,",
           (long long)regions, (long long)g.api_kernel_launches, (long long)g.api_graph_launches, (long long)g.api_memcpy,
           (long long)g.api_sync, (long long)g.api_other, (long long)g.kernels, (long long)g.memcpys, (long long)g.memsets,
           (unsigned long long)g.memcpy_bytes, (unsigned long long)g.memcpy_ns, (unsigned long long)g.kernel_ns,
           (unsigned long long)(g.last_end > g.first_start && g.first_start != UINT64_MAX ? g.last_end - g.first_start : 0));
  o += buf;
  o += "\"kernels\":[";
  bool first = true;
  for (auto& [name, agg] : ks) {
    snprintf(buf, sizeof buf, "%s{\"name\":\"%s\",\"count\":%lld,\"ns\":%llu,\"ns_per_region\":%.0f}", first ? "" : ",",
             esc(name.substr(0, 300)).c_str(), (long long)agg.count, (unsigned long long)agg.ns, agg.ns / R);
    o += buf;
    first = false;
  }
  o += "],\"api\":{";
  first = true;
  for (auto& [name, cnt] : g.api_names) {
    snprintf(buf, sizeof buf, "%s\"%s\":%lld", first ? "" : ",", esc(name).c_str(), (long long)cnt);
    o += buf;
    first = false;
  }
  o += "}}";
  return o;
}

}  // namespace abacus
