// Parameter correlation between workers (ALGORITHMS.md 4, gym's
// aux/correlation.py): each worker's parameters flattened in model order, the
// Pearson correlation of every pair i < j, averaged over pairs. 1 means the
// workers hold the same model up to an affine map; it falls as they drift.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace atl {

struct Correlation {
  double mean = 1;  // over pairs; NaN if a worker's parameters are constant
  double min = 1;   // the least correlated pair
};

// workers[w] = worker w's parameter list (same shapes for all). Computed in
// float64; one (N x P) copy and one N x N Gram matrix, O(N^2 P) flops.
Correlation parameter_correlation(const std::vector<std::vector<at::Tensor>>& workers);

}  // namespace atl
