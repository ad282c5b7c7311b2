// Allocator for the large, randomly indexed arrays (embedding table, sparse optimizer state):
// 2 MiB-aligned and marked MADV_HUGEPAGE, so that the kernel's transparent huge pages (in the
// common "madvise" mode) back them. Random row lookups then miss the TLB far less often. An element
// made without a value (resize) is left uninitialised: the owner fills the array on its threads,
// so that tens of GB are first touched in parallel, not by one thread.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>
#ifdef __linux__
#include <sys/mman.h>
#endif

namespace abacus {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    constexpr std::size_t kHuge = std::size_t(2) << 20;
    if (bytes < kHuge) {
      void* p = std::malloc(bytes ? bytes : 1);
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    void* p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
    if (!p) throw std::bad_alloc();
#ifdef __linux__
    madvise(p, (bytes + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: a float keeps whatever the page holds
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const { return false; }
};

using HugeFloatVec = std::vector<float, HugePageAllocator<float>>;

}  // namespace abacus
