// Batched matrix products for attention, with the batch split across the
// worker's BLAS threads. OpenBLAS splits each product across its threads
// instead, which for attention's many small matrices (128 x 48 x 128 in the
// default GPT) is slower on 2 threads than on 1; one thread per share of the
// batch runs each product single-threaded. Measured in docs/BENCHMARKS.md.
#pragma once

#include <ATen/core/Tensor.h>

namespace atl {

// out (G, n, m) = a (G, n, k) times b (G, k, m), not differentiable. Any of
// the three may be a strided view (a head read in place from the fused
// q/k/v projection, say): each matrix needs a unit stride in one of its two
// dimensions, as BLAS does. With one BLAS thread this is at::bmm_out; with
// train.gemm = onednn, fp32 products go to oneDNN (model/gemm.h).
void bmm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

}  // namespace atl
