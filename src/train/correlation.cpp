#include "train/correlation.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

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
  at::Tensor x = at::stack(rows);                 // (N, P)
  x.sub_(x.mean({1}, /*keepdim=*/true));
  const at::Tensor gram = at::mm(x, x.t());       // (N, N)
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
