// Intra-op thread budget: N simulated workers share the machine's cores
// without oversubscription (ATen/OpenMP and OpenBLAS both obey it).
#pragma once

#include <cstdint>
#include <string>

namespace atl {

// Cores available to this process.
int64_t available_cores();
// Threads each of `workers` workers may use out of `total` (0 = all cores).
int64_t threads_per_worker(int64_t total, int64_t workers);
// Gives the calling worker `threads` BLAS threads (ATen element-wise ops run
// single-threaded; see threads.cpp for why). `onednn_products`: the matrix
// products run in oneDNN (train.precision = bf16), which takes ATen's own
// thread count, so ATen gets the threads too.
void set_compute_threads(int64_t threads, bool onednn_products = false);
// The BLAS thread count set_compute_threads last gave (1 without OpenBLAS).
int64_t compute_threads();
// Keeps freed memory in the process for reuse (call once, early).
void tune_allocator();
// CPU time consumed by the calling thread, in seconds.
double thread_cpu_seconds();

}  // namespace atl
