// Agreement between workers.
//
// parameter_correlation (ALGORITHMS.md 4, gym's aux/correlation.py): each
// worker's parameters flattened in model order, the Pearson correlation of
// every pair i < j, averaged over pairs. 1 means the workers hold the same
// model up to an affine map. Workers start from one initial model, whose
// weights (and LayerNorm gains near 1) dominate that variance, so it stays
// near 1 however far the workers drift apart.
//
// worker_agreement (ALGORITHMS.md 9, "Worker agreement") measures what the
// workers did since that start instead, with θ_0 the common initial model,
// θ_i worker i's parameters and θ̄ their mean:
// - update correlation: per tensor, the Pearson correlation of the updates
//   θ_i − θ_0 and θ_j − θ_0 (centred per tensor), averaged over tensors with
//   their sizes as weights, then over pairs i < j. 1 for identical updates,
//   about 0 for independent ones.
// - relative disagreement: mean over workers of ‖θ_i − θ̄‖ / ‖θ̄ − θ_0‖
//   (norms over all parameters together): 0 when the workers agree, about
//   √(N − 1) for N independent updates of equal scale.
#pragma once

#include <ATen/core/Tensor.h>

#include <limits>
#include <vector>

namespace atl {

struct Correlation {
  double mean = 1;  // over pairs; NaN if a worker's parameters are constant
  double min = 1;   // the least correlated pair
};

// workers[w] = worker w's parameter list (same shapes for all). Computed in
// float64; one (N x P) copy and one N x N Gram matrix, O(N^2 P) flops.
Correlation parameter_correlation(const std::vector<std::vector<at::Tensor>>& workers);

struct Agreement {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  double update_correlation = kNone;      // mean over pairs; NaN when no tensor has moved on both sides
  double update_correlation_min = kNone;  // the least correlated pair
  double disagreement = kNone;            // NaN while θ̄ = θ_0 (at step 0)
};

// workers[w] = worker w's parameter list, `initial` = θ_0 (same shapes).
// One pass over the tensors, in float64: per tensor an (N x n) copy of the
// updates and an N x N Gram matrix.
Agreement worker_agreement(const std::vector<std::vector<at::Tensor>>& workers, const std::vector<at::Tensor>& initial);

}  // namespace atl
