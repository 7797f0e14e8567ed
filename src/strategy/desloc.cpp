#include "strategy/desloc.h"

#include <ATen/ATen.h>

#include "strategy/flat.h"

namespace atl {

DesLocStrategy::DesLocStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names)
    : params_(params),
      comm_(comm),
      inner_(cfg.optim, params, names),
      param_period_(cfg.desloc.param_period),
      first_period_(cfg.desloc.first_moment_factor * cfg.desloc.param_period),
      second_period_(cfg.desloc.second_moment_factor * cfg.desloc.param_period) {}

void DesLocStrategy::step(int64_t t, double lr) {
  inner_.step(lr);
  at::NoGradGuard no_grad;
  auto due = [t](int64_t period) { return period > 0 && (t + 1) % period == 0; };
  if (due(param_period_)) {
    at::Tensor theta = flatten_values(params_);
    comm_.all_reduce(theta, ReduceOp::Mean, "params");
    assign_values(theta, params_);
  }
  // In place: the optimizer's steps read these buffers (and their views).
  if (due(first_period_)) comm_.all_reduce(inner_.first_moments(), ReduceOp::Mean, "first-moment");
  if (due(second_period_)) comm_.all_reduce(inner_.second_moments(), ReduceOp::Mean, "second-moment");
}

}  // namespace atl
