#include "strategy/diloco.h"

#include "strategy/flat.h"

namespace atl {

DiLoCoStrategy::DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : params_(params), comm_(comm), inner_(cfg.optim, params), cfg_(cfg.diloco) {
  global_ = flatten_values(params_);
  momentum_ = at::zeros_like(global_);
  global_views_ = views_of(global_, params_);
}

void DiLoCoStrategy::step(int64_t t, double lr) {
  inner_.step(lr);
  if ((t + 1) % cfg_.inner_steps == 0) outer_step();
}

void DiLoCoStrategy::outer_step() {
  at::NoGradGuard no_grad;
  at::Tensor delta = global_ - flatten_values(params_);  // points from the workers back to theta_g
  comm_.all_reduce(delta, ReduceOp::Mean, "pseudo-grad");
  const double mu = cfg_.outer_momentum;
  momentum_.mul_(mu).add_(delta);
  at::Tensor update = cfg_.nesterov ? delta.add(momentum_, mu) : momentum_;
  global_.sub_(update, cfg_.outer_lr);
  assign_values(global_, params_);
}

}  // namespace atl
