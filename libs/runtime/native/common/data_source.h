// A read-only view of samples: in-memory typed arrays (zero copy) or mmapped shards, in the model's
// column order. Rows are addressed globally; parts are concatenated.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "shard.h"

namespace abacus {

struct DataPart {
  int64_t rows = 0;
  const float* numeric = nullptr;  // rows x num_stride, row-major
  int64_t num_stride = 0;
  const float* labels = nullptr;
  const float* weights = nullptr;  // optional
  const int32_t* key = nullptr;    // optional group key
  std::vector<const int32_t*> offs, ids;  // per model slot, CSR (rows+1 offsets)
};

struct DataSource {
  std::vector<DataPart> parts;
  std::vector<int64_t> start;  // first global row of each part
  int64_t rows = 0;
  std::vector<int> num_map;    // model numeric column -> data column
  std::vector<std::shared_ptr<MappedShard>> keep;  // shards kept mapped while in use

  void finish() {
    start.clear();
    rows = 0;
    for (auto& p : parts) { start.push_back(rows); rows += p.rows; }
  }
  const DataPart& locate(int64_t g, int64_t& local) const {
    if (parts.size() == 1) { local = g; return parts[0]; }
    size_t i = std::upper_bound(start.begin(), start.end(), g) - start.begin() - 1;
    local = g - start[i];
    return parts[i];
  }
  bool has_weights() const { return !parts.empty() && parts[0].weights; }
  // whether the rows are read from mapped shard files (not arrays handed over in memory)
  bool mapped() const { return !keep.empty(); }
  // drops the pages of the mapped shards from the process (see MappedShard::release); no-op in memory
  void release() const {
    for (auto& s : keep) s->release();
  }
  // drops the pages of part i's shard (every shard's when parts and shards do not pair up); a pass
  // over the parts calls it behind each part, so the pass maps one shard at a time, not the set
  // (a read maps the page-cache pages around it too: sparse reads of a whole part map most of it)
  void release_part(size_t i) const {
    if (keep.empty()) return;
    if (keep.size() == parts.size()) keep[i]->release();
    else release();
  }
  bool has_key() const { return !parts.empty() && parts[0].key; }
};

}  // namespace abacus
