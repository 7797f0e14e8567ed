#include "train/correlation.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace atl {

Correlation parameter_correlation(const std::vector<std::vector<at::Tensor>>& workers) {
  Correlation c;
  const int64_t n = static_cast<int64_t>(workers.size());
  if (n < 2) return c;
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> rows;
  for (const auto& params : workers) {
    std::vector<at::Tensor> parts;
    for (const auto& p : params) parts.push_back(p.detach().reshape({-1}).to(at::kDouble));
    rows.push_back(at::cat(parts));
  }
  at::Tensor x = at::stack(rows);  // (N, P)
  x.sub_(x.mean({1}, /*keepdim=*/true));
  const at::Tensor gram = at::mm(x, x.t());  // (N, N)
  const at::Tensor norm = gram.diagonal().sqrt();
  const at::Tensor corr = gram / at::outer(norm, norm);
  auto a = corr.accessor<double, 2>();
  double sum = 0, lo = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      sum += a[i][j];
      lo = std::min(lo, a[i][j]);
    }
  c.mean = sum / double(n * (n - 1) / 2);
  c.min = lo;
  return c;
}

}  // namespace atl

namespace atl {

Agreement worker_agreement(const std::vector<std::vector<at::Tensor>>& workers,
                           const std::vector<at::Tensor>& initial) {
  Agreement a;
  const int64_t n = static_cast<int64_t>(workers.size());
  if (n == 0) return a;
  for (const auto& params : workers)
    if (params.size() != initial.size())
      throw std::invalid_argument("worker_agreement: a worker has " + std::to_string(params.size()) +
                                  " parameter tensors, the initial model " + std::to_string(initial.size()));
  at::NoGradGuard no_grad;
  // Per pair (i, j): the size-weighted sum of the tensors' correlations and
  // the sizes that took part.
  std::vector<double> corr_sum(size_t(n * n), 0.0), corr_weight(size_t(n * n), 0.0);
  std::vector<double> spread(size_t(n), 0.0);  // ‖θ_i − θ̄‖²
  double moved = 0;                            // ‖θ̄ − θ_0‖²
  for (size_t k = 0; k < initial.size(); ++k) {
    const at::Tensor start = initial[k].detach().reshape({-1}).to(at::kDouble);
    std::vector<at::Tensor> rows;
    for (const auto& params : workers) rows.push_back(params[k].detach().reshape({-1}).to(at::kDouble) - start);
    const at::Tensor u = at::stack(rows);        // (N, n_k): the updates θ_i − θ_0
    const at::Tensor mean_update = u.mean({0});  // (n_k): θ̄ − θ_0
    moved += mean_update.square().sum().item<double>();
    const at::Tensor dev = (u - mean_update).square().sum({1});    // (N)
    const at::Tensor centred = u - u.mean({1}, /*keepdim=*/true);  // (N, n_k)
    const at::Tensor gram = at::mm(centred, centred.t());          // (N, N)
    const at::Tensor raw = u.square().sum({1});                    // (N)
    auto g = gram.accessor<double, 2>();
    auto d = dev.accessor<double, 1>();
    auto r = raw.accessor<double, 1>();
    for (int64_t i = 0; i < n; ++i) spread[size_t(i)] += d[i];
    const double size = double(start.numel());
    // A tensor whose update has no variance on one side (not moved, moved by
    // a constant, or a single number) says nothing about correlation: it is
    // skipped for that pair. "No variance" is up to float64 rounding of the
    // centring, relative to the update's own size.
    auto varies = [&](int64_t i) { return g[i][i] > 1e-24 * r[i] && g[i][i] > 0; };
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) {
        if (!varies(i) || !varies(j)) continue;
        corr_sum[size_t(i * n + j)] += size * g[i][j] / std::sqrt(g[i][i] * g[j][j]);
        corr_weight[size_t(i * n + j)] += size;
      }
  }
  if (n >= 2) {
    double sum = 0, lo = std::numeric_limits<double>::infinity();
    bool every_pair = true;
    for (int64_t i = 0; i < n && every_pair; ++i)
      for (int64_t j = i + 1; j < n; ++j) {
        const double w = corr_weight[size_t(i * n + j)];
        if (w <= 0) {
          every_pair = false;  // a pair with nothing left: the mean over pairs is undefined
          break;
        }
        const double c = corr_sum[size_t(i * n + j)] / w;
        sum += c;
        lo = std::min(lo, c);
      }
    if (every_pair) {
      a.update_correlation = sum / double(n * (n - 1) / 2);
      a.update_correlation_min = lo;
    }
  }
  if (moved > 0) {
    double total = 0;
    for (double s : spread) total += std::sqrt(s);
    a.disagreement = total / double(n) / std::sqrt(moved);
  }
  return a;
}

}  // namespace atl
