// CUPTI activity trace of a region (see cupti_trace.cc).
#pragma once
#include <cstdint>
#include <string>

namespace abacus {
// Starts tracing (after a device synchronize). Returns "" or the reason CUPTI is unavailable.
std::string cupti_trace_start();
// Stops, flushes and returns the region's counts as JSON; per-kernel times also divided by
// `regions` (e.g. the number of training steps inside the region).
std::string cupti_trace_stop(int64_t regions);
}  // namespace abacus
