// Binary shard file: versioned header, section table with CRC-32C per section, 64-byte aligned
// little-endian columns. Opened with mmap so training streams from the page cache, not JS memory.
// Layout is documented in libs/runtime/README.md ("Shard format").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace abacus {

constexpr char kShardMagic[8] = {'A', 'B', 'S', 'H', 'A', 'R', 'D', '\0'};
constexpr uint32_t kShardVersion = 1;
enum SectionKind : uint32_t { kNumeric = 1, kLabels = 2, kWeights = 3, kKey = 4, kSlotOffsets = 5, kSlotIds = 6 };

struct ShardSection {
  uint64_t offset, bytes;
  uint32_t crc, kind, index, reserved;
};

struct SectionData {
  uint32_t kind, index;
  const void* data;
  uint64_t bytes;
};

// Throws std::runtime_error on I/O failure.
void write_shard(const std::string& path, uint64_t rows, const std::string& json, const std::vector<SectionData>& sections);

class MappedShard {
 public:
  MappedShard(const std::string& path, bool verify);  // throws std::runtime_error naming the problem
  ~MappedShard();
  uint64_t rows() const { return rows_; }
  const std::string& json() const { return json_; }
  // nullptr when absent
  const void* section(uint32_t kind, uint32_t index, uint64_t* bytes = nullptr) const;
  // Drops the mapped pages from this process (MADV_DONTNEED): they stay in the page cache, so the
  // next read is a minor fault, but the process's resident memory no longer holds them. Reading a
  // set far larger than memory with a release behind each window keeps the worker's RSS bounded.
  void release() const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  uint64_t rows_ = 0;
  std::string json_;
  std::vector<ShardSection> sections_;
};

}  // namespace abacus
