// Batched matrix products for attention, with the batch split across the
// worker's BLAS threads. OpenBLAS splits each product across its threads
// instead, which for attention's many small matrices (128 x 48 x 128 in the
// default GPT) is slower on 2 threads than on 1; one thread per share of the
// batch runs each product single-threaded. Measured in docs/BENCHMARKS.md.
#pragma once

#include <ATen/core/Tensor.h>

namespace atl {

// a (G, n, k) times b (G, k, m) -> (G, n, m), differentiable. The same
// per-matrix products as at::bmm; with one BLAS thread it is at::bmm.
at::Tensor batched_matmul(const at::Tensor& a, const at::Tensor& b);

}  // namespace atl
