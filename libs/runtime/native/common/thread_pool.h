// Fixed worker pool created once per model. run(fn) calls fn(tid) on every thread (the caller is
// tid 0) and returns when all are done. Work is split by static ranges, so a result depends only on
// the thread count, never on scheduling.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace abacus {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : n_(threads < 1 ? 1 : threads) {
    for (int t = 1; t < n_; ++t) workers_.emplace_back([this, t] { loop(t); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      ++gen_;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return n_; }

  void run(const std::function<void(int)>& fn) {
    if (n_ == 1) { fn(0); return; }
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      pending_.store(n_ - 1, std::memory_order_relaxed);
      ++gen_;
    }
    cv_.notify_all();
    fn(0);
    // Short spin, then sleep: most regions are sub-millisecond.
    for (int i = 0; i < 20000 && pending_.load(std::memory_order_acquire) > 0; ++i) std::this_thread::yield();
    if (pending_.load(std::memory_order_acquire) > 0) {
      std::unique_lock<std::mutex> lk(done_mu_);
      done_cv_.wait(lk, [this] { return pending_.load(std::memory_order_acquire) == 0; });
    }
  }

  // Contiguous static range [b, e) of n items for thread t, aligned to `align`.
  static void range(int64_t n, int t, int T, int64_t& b, int64_t& e, int64_t align = 1) {
    int64_t blocks = (n + align - 1) / align;
    int64_t per = blocks / T, rem = blocks % T;
    int64_t bb = t * per + (t < rem ? t : rem);
    int64_t eb = bb + per + (t < rem ? 1 : 0);
    b = bb * align;
    e = eb * align;
    if (b > n) b = n;
    if (e > n) e = n;
  }

 private:
  void loop(int t) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* fn;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return gen_ != seen; });
        seen = gen_;
        if (stop_) return;
        fn = fn_;
      }
      (*fn)(t);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lk(done_mu_);
        done_cv_.notify_one();
      }
    }
  }
  int n_;
  std::vector<std::thread> workers_;
  std::mutex mu_, done_mu_;
  std::condition_variable cv_, done_cv_;
  uint64_t gen_ = 0;
  bool stop_ = false;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<int> pending_{0};
};

}  // namespace abacus
