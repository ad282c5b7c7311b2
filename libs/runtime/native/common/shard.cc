#include "shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "crc32c.h"

namespace abacus {

namespace {
constexpr size_t kHeaderFixed = 40;
constexpr size_t kSectionEntry = 32;
uint64_t align64(uint64_t x) { return (x + 63) & ~uint64_t(63); }
template <class T> void put(std::vector<char>& b, size_t at, T v) { std::memcpy(b.data() + at, &v, sizeof(T)); }
template <class T> T get(const char* p) { T v; std::memcpy(&v, p, sizeof(T)); return v; }
}  // namespace

void write_shard(const std::string& path, uint64_t rows, const std::string& json, const std::vector<SectionData>& sections) {
  size_t table_bytes = sections.size() * kSectionEntry;
  uint64_t pos = align64(kHeaderFixed + table_bytes + json.size());
  std::vector<ShardSection> table;
  for (const auto& s : sections) {
    table.push_back({pos, s.bytes, crc32c(0, s.data, s.bytes), s.kind, s.index, 0});
    pos = align64(pos + s.bytes);
  }
  std::vector<char> head(align64(kHeaderFixed + table_bytes + json.size()), 0);
  std::memcpy(head.data(), kShardMagic, 8);
  put<uint32_t>(head, 8, kShardVersion);
  put<uint32_t>(head, 12, 0);
  put<uint64_t>(head, 16, rows);
  put<uint32_t>(head, 24, (uint32_t)json.size());
  put<uint32_t>(head, 28, (uint32_t)sections.size());
  for (size_t i = 0; i < table.size(); ++i) {
    size_t at = kHeaderFixed + i * kSectionEntry;
    put<uint64_t>(head, at, table[i].offset);
    put<uint64_t>(head, at + 8, table[i].bytes);
    put<uint32_t>(head, at + 16, table[i].crc);
    put<uint32_t>(head, at + 20, table[i].kind);
    put<uint32_t>(head, at + 24, table[i].index);
    put<uint32_t>(head, at + 28, 0);
  }
  std::memcpy(head.data() + kHeaderFixed + table_bytes, json.data(), json.size());
  put<uint32_t>(head, 32, crc32c(0, json.data(), json.size()));
  put<uint32_t>(head, 36, crc32c(0, head.data() + kHeaderFixed, table_bytes));

  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot open " + tmp + " for writing: " + std::strerror(errno));
  static const char zeros[64] = {0};
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  uint64_t written = head.size();
  for (size_t i = 0; ok && i < sections.size(); ++i) {
    if (written < table[i].offset) { ok = std::fwrite(zeros, 1, table[i].offset - written, f) == table[i].offset - written; written = table[i].offset; }
    ok = ok && std::fwrite(sections[i].data, 1, sections[i].bytes, f) == sections[i].bytes;
    written += sections[i].bytes;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("failed writing shard " + path);
  }
}

MappedShard::MappedShard(const std::string& path, bool verify) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("cannot open shard " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) { ::close(fd); throw std::runtime_error("cannot stat shard " + path); }
  size_ = (size_t)st.st_size;
  if (size_ < kHeaderFixed) { ::close(fd); throw std::runtime_error("shard " + path + " is truncated (no header)"); }
  map_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) { map_ = nullptr; throw std::runtime_error("cannot mmap shard " + path); }
  const char* p = static_cast<const char*>(map_);
  auto fail = [&](const std::string& why) { munmap(map_, size_); map_ = nullptr; throw std::runtime_error("shard " + path + ": " + why); };
  if (std::memcmp(p, kShardMagic, 8) != 0) fail("bad magic (not an Abacus shard)");
  uint32_t version = get<uint32_t>(p + 8);
  if (version != kShardVersion) fail("unsupported version " + std::to_string(version) + " (this build reads " + std::to_string(kShardVersion) + ")");
  rows_ = get<uint64_t>(p + 16);
  uint32_t json_len = get<uint32_t>(p + 24), nsec = get<uint32_t>(p + 28);
  size_t table_bytes = (size_t)nsec * kSectionEntry;
  if (kHeaderFixed + table_bytes + json_len > size_) fail("truncated header");
  if (crc32c(0, p + kHeaderFixed, table_bytes) != get<uint32_t>(p + 36)) fail("section table checksum mismatch");
  if (crc32c(0, p + kHeaderFixed + table_bytes, json_len) != get<uint32_t>(p + 32)) fail("header JSON checksum mismatch");
  json_.assign(p + kHeaderFixed + table_bytes, json_len);
  for (uint32_t i = 0; i < nsec; ++i) {
    const char* e = p + kHeaderFixed + (size_t)i * kSectionEntry;
    ShardSection s{get<uint64_t>(e), get<uint64_t>(e + 8), get<uint32_t>(e + 16), get<uint32_t>(e + 20), get<uint32_t>(e + 24), 0};
    if (s.offset + s.bytes > size_) fail("section " + std::to_string(i) + " runs past the end of the file (truncated?)");
    if (s.offset % 64 != 0) fail("section " + std::to_string(i) + " is not 64-byte aligned");
    if (verify && crc32c(0, p + s.offset, s.bytes) != s.crc) fail("checksum mismatch in section " + std::to_string(i) + " (kind " + std::to_string(s.kind) + ")");
    sections_.push_back(s);
  }
  // verifying read every page: let them go (they are read again as training reaches them)
  if (verify) release();
}

void MappedShard::release() const {
  if (map_) madvise(map_, size_, MADV_DONTNEED);
}

MappedShard::~MappedShard() {
  if (map_) munmap(map_, size_);
}

const void* MappedShard::section(uint32_t kind, uint32_t index, uint64_t* bytes) const {
  for (const auto& s : sections_)
    if (s.kind == kind && s.index == index) {
      if (bytes) *bytes = s.bytes;
      return static_cast<const char*>(map_) + s.offset;
    }
  return nullptr;
}

}  // namespace abacus
