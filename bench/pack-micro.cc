// Times the two host packers of CUDA training streamed from shards on synthetic ctr26-shaped
// columns (1,310,720 rows, 13 numeric, 26 single-id slots), in memory and from a mapped file whose
// pages are dropped before each window copy: one window copied by column (as the device holds it) and
// row-major (records), then 32 batches of 8,192
// rows packed from the records and from the columns, at 1-16 threads; then a whole epoch through
// RecordStream, its batches packed on the host against their records copied raw (for the device).
//   g++ -O3 -mavx2 -mfma -std=c++17 -pthread -Ilibs/runtime/native/common bench/pack-micro.cc libs/runtime/native/common/shard.cc libs/runtime/native/common/crc32c.cc -o pack-micro
//   ./pack-micro [scratch file]
#include "batch_pack.h"
#include <chrono>
#include <cstdio>
#include <random>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
using namespace abacus;
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  const int64_t n = 1310720; const int N = 13, S = 26;
  const char* path = argc > 1 ? argv[1] : "/tmp/micro2.bin";
  // layout: numeric, labels, then per slot offs (n+1) and ids (n)
  size_t bytes = (n * N + n + S * (2 * n + 1)) * 4;
  {
    std::vector<int32_t> buf(bytes / 4); std::mt19937 g(1); size_t at = 0;
    for (int64_t i = 0; i < n * N + n; ++i) { float f = g() % 100; memcpy(&buf[at++], &f, 4); }
    for (int s = 0; s < S; ++s) { for (int64_t r = 0; r <= n; ++r) buf[at++] = r; for (int64_t r = 0; r < n; ++r) buf[at++] = g() % 100000; }
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644); size_t w = 0; while (w < bytes) w += write(fd, (char*)buf.data() + w, bytes - w); close(fd);
  }
  int fd = open(path, O_RDONLY); const int32_t* m = (const int32_t*)mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  std::vector<int32_t> mem(m, m + bytes / 4);
  for (int mode = 0; mode < 2; ++mode) {
    const int32_t* base = mode ? m : mem.data();
    DataSource ds; DataPart p; p.rows = n; p.numeric = (const float*)base; p.num_stride = N; p.labels = (const float*)base + n * N;
    const int32_t* at = base + n * N + n;
    for (int s = 0; s < S; ++s) { p.offs.push_back(at); p.ids.push_back(at + n + 1); at += 2 * n + 1; }
    ds.parts.push_back(p); for (int j = 0; j < N; ++j) ds.num_map.push_back(j); ds.finish();
    std::vector<int64_t> rows(n); for (int64_t i = 0; i < n; ++i) rows[i] = i;
    WindowedShuffle ws(rows, true, true, 1, 0);
    std::vector<int64_t> plain, perm; ws.window(1, plain, perm);
    for (int threads : {1, 2, 4, 8, 16}) {
      ThreadPool tp(threads); WindowRecords rec; WindowColumns cols; double best = 1e9, bestc = 1e9;
      for (int it = 0; it < 3; ++it) {
        if (mode) madvise((void*)m, bytes, MADV_DONTNEED);
        double t0 = now(); rec.build(tp, ds, plain.data(), plain.size(), N, S); best = std::min(best, now() - t0);
        if (mode) madvise((void*)m, bytes, MADV_DONTNEED);
        t0 = now(); cols.build(tp, ds, plain.data(), plain.size(), N, S); bestc = std::min(bestc, now() - t0);
      }
      StageLayout L = stage_layout(8192, N, S, 1, false);
      std::vector<uint8_t> pin(L.cap); std::vector<int64_t> b, scratch; std::vector<const int32_t*> recs(8192);
      double tpk = 0, tc = 0;
      for (int k = 0; k < 32; ++k) {
        for (int r = 0; r < 8192; ++r) recs[r] = rec.words.data() + rec.off[perm[k * 8192 + r]];
        double t0 = now(); pack_records(tp, recs.data(), 8192, N, S, false, L, pin.data(), b, scratch); tpk += now() - t0;
        std::vector<int64_t> rr(8192); for (int r = 0; r < 8192; ++r) rr[r] = plain[perm[k * 8192 + r]];
        t0 = now(); pack_rows(tp, ds, rr.data(), 8192, N, S, L, pin.data(), b); tc += now() - t0;
      }
      printf("%s threads %2d: window copy by column %.1f ms, row-major %.1f ms, pack from records %.3f ms/batch, pack from columns %.3f ms/batch\n", mode ? "mapped" : "memory", threads, bestc * 1e3, best * 1e3, tpk / 32 * 1e3, tc / 32 * 1e3);
    }
  }
  // A whole epoch through RecordStream, as training does it (windows copied ahead on their own
  // threads): the batch packed on the host (pack) against the records copied as they are for the
  // device to unpack (pack_raw), per batch on the caller's side (waits for window copies included).
  {
    DataSource ds; DataPart p; p.rows = n; p.numeric = (const float*)mem.data(); p.num_stride = N; p.labels = (const float*)mem.data() + n * N;
    const int32_t* at = mem.data() + n * N + n;
    for (int s = 0; s < S; ++s) { p.offs.push_back(at); p.ids.push_back(at + n + 1); at += 2 * n + 1; }
    ds.parts.push_back(p); for (int j = 0; j < N; ++j) ds.num_map.push_back(j); ds.finish();
    std::vector<int64_t> rows(n); for (int64_t i = 0; i < n; ++i) rows[i] = i;
    const int64_t B = 8192;
    StageLayout L = stage_layout(B, N, S, 1, false);
    RawLayout RL = raw_layout(B, N, S, 1, false);
    std::vector<uint8_t> pin(std::max(L.cap, RL.cap)); std::vector<int64_t> base;
    for (int threads : {1, 2, 4, 8}) {
      double t[2];
      for (int raw = 0; raw < 2; ++raw) {
        RecordStream rs(ds, rows, true, true, 1, 1, N, S, threads, threads);
        rs.start_epoch(0);
        const double t0 = now();
        for (int64_t b0 = 0; b0 + B <= n; b0 += B) raw ? rs.pack_raw(b0, B, RL, pin.data()) : rs.pack(b0, B, L, pin.data(), base);
        t[raw] = (now() - t0) / (double)(n / B);
      }
      printf("epoch, %d copy + %d packing threads: pack %.3f ms/batch, pack_raw %.3f ms/batch\n", threads, threads, t[0] * 1e3, t[1] * 1e3);
    }
  }
  unlink(path);
}
