// Batched matrix products in OpenBLAS, with the batch split across the
// worker's BLAS threads. OpenBLAS splits each product across its threads
// instead, which for attention's many small matrices (128 x 48 x 128 in the
// default GPT) is slower on 2 threads than on 1; one thread per share of the
// batch runs each product single-threaded. Measured in docs/BENCHMARKS.md.
// model/gemm.h's bmm_into picks between this and oneDNN (train.gemm).
#pragma once

#include <ATen/core/Tensor.h>

namespace atl {

// out (G, n, m) = a (G, n, k) times b (G, k, m), not differentiable. Any of
// the three may be a strided view (a head read in place from the fused
// q/k/v projection, say): each matrix needs a unit stride in one of its two
// dimensions, as BLAS does. With one BLAS thread this is at::bmm_out.
void openblas_bmm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// OpenBLAS's thread count on the calling thread (1 without OpenBLAS).
int openblas_threads();

}  // namespace atl
