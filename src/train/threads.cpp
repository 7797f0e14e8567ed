#include "train/threads.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

#include "model/batched_matmul.h"

namespace atl {

int64_t available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int64_t threads_per_worker(int64_t total, int64_t workers) {
  const int64_t budget = total > 0 ? total : available_cores();
  return std::max<int64_t>(1, budget / std::max<int64_t>(1, workers));
}

void set_compute_threads(int64_t threads, bool onednn_products) {
  // ATen's element-wise kernels stay on the calling thread: on these small
  // models their OpenMP pool, spinning between regions, competes with
  // OpenBLAS's pool for the same cores and made a 2-thread step slower than
  // a 1-thread one. GEMMs, where the time goes, get all `threads`.
  // With bf16 the products are oneDNN's, on ATen's pool, and OpenBLAS has
  // little left to do: that pool gets the threads instead.
  at::set_num_threads(onednn_products ? static_cast<int>(threads) : 1);
  // OpenBLAS keeps its own pool; LibTorch does not tell it. Looked up at run
  // time so that builds against other BLAS libraries still link.
  using SetThreads = void (*)(int);
  static const auto openblas_set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (openblas_set) openblas_set(static_cast<int>(threads));
}

int64_t compute_threads() { return openblas_threads(); }

void tune_allocator() {
  // glibc hands large blocks (> 128 kB) back to the kernel on free, so every
  // step's activations and GEMM buffers arrive as fresh pages: page faults
  // plus the kernel zeroing them cost ~30% of a small model's step. Keep
  // freed memory in the heap for reuse instead. Call before starting threads.
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    // Worker threads otherwise get their own arenas, whose heaps are trimmed
    // by other rules; one arena keeps them on the tuned heap (allocations are
    // few and large, so its lock is not contended). Measured: +14% tokens/s.
    mallopt(M_ARENA_MAX, 1);
    return true;
  }();
  (void)done;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace atl
