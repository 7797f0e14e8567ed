#include "strategy/diloco.h"

#include "strategy/flat.h"

namespace atl {

OuterSync::OuterSync(const DiLoCoConfig& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : params_(std::move(params)), comm_(comm), cfg_(cfg) {
  global_ = flatten_values(params_);
  momentum_ = at::zeros_like(global_);
  global_views_ = views_of(global_, params_);
}

void OuterSync::sync() {
  at::NoGradGuard no_grad;
  at::Tensor delta = global_ - flatten_values(params_);  // points from the workers back to theta_g
  comm_.all_reduce(delta, ReduceOp::Mean, "pseudo-grad");
  const double mu = cfg_.outer_momentum;
  momentum_.mul_(mu).add_(delta);
  at::Tensor update = cfg_.nesterov ? delta.add(momentum_, mu) : momentum_;
  global_.sub_(update, cfg_.outer_lr);
  assign_values(global_, params_);
}

DiLoCoStrategy::DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : inner_(cfg.optim, params), outer_(cfg.diloco, params, comm), inner_steps_(cfg.diloco.inner_steps) {}

void DiLoCoStrategy::step(int64_t t, double lr) {
  inner_.step(lr);
  if ((t + 1) % inner_steps_ == 0) outer_.sync();
}

}  // namespace atl
