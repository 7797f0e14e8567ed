#include "strategy/diloco.h"

#include <cmath>

#include "strategy/baselines.h"
#include "strategy/flat.h"

namespace atl {

OuterSync::OuterSync(const DiLoCoConfig& cfg, const CodecConfig& codec, std::vector<at::Tensor> params,
                     Communicator& comm)
    : params_(std::move(params)), comm_(comm), cfg_(cfg), codec_(cfg.codec, codec) {
  global_ = flatten_values(params_);
  momentum_ = at::zeros_like(global_);
  if (cfg_.outer_optimizer == "adam") second_moment_ = at::zeros_like(global_);
  global_views_ = views_of(global_, params_);
}

void OuterSync::sync() {
  at::NoGradGuard no_grad;
  at::Tensor delta = global_ - flatten_values(params_);  // points from the workers back to theta_g
  mean_all_reduce(comm_, codec_, delta, "pseudo-grad");
  const double mu = cfg_.outer_momentum;
  if (cfg_.outer_optimizer == "adam") {
    // The DiLoCo paper's outer-optimizer ablation: Adam on the pseudo-gradient
    // (beta1 = outer_momentum), with PyTorch's bias correction.
    ++outer_steps_;
    const double b2 = cfg_.outer_beta2;
    momentum_.mul_(mu).add_(delta, 1 - mu);
    second_moment_.mul_(b2).addcmul_(delta, delta, 1 - b2);
    const double c1 = 1 - std::pow(mu, static_cast<double>(outer_steps_));
    const double c2 = 1 - std::pow(b2, static_cast<double>(outer_steps_));
    at::Tensor denom = (second_moment_ / c2).sqrt_().add_(cfg_.outer_eps);
    global_.addcdiv_(momentum_, denom, -cfg_.outer_lr / c1);
  } else {
    momentum_.mul_(mu).add_(delta);
    at::Tensor update = cfg_.nesterov ? delta.add(momentum_, mu) : momentum_;
    global_.sub_(update, cfg_.outer_lr);
  }
  assign_values(global_, params_);
}

void OuterSync::reset_global() {
  at::NoGradGuard no_grad;
  global_.copy_(flatten_values(params_));
  momentum_.zero_();
  if (second_moment_.defined()) second_moment_.zero_();
  outer_steps_ = 0;
}

void OuterSync::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "outer");
  v.tensor("global", global_);  // in place: global_views_ stay views of it
  v.tensor("momentum", momentum_);
  v.optional_tensor("second_moment", second_moment_);
  v.integer("outer_steps", outer_steps_);
  codec_.visit_state(v);
}

DiLoCoStrategy::DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : params_(params),
      comm_(comm),
      inner_(cfg.optim, params),
      outer_(cfg.diloco, cfg.codec, params, comm),
      grad_codec_("fp32", cfg.codec),
      inner_steps_(cfg.diloco.inner_steps),
      warmup_(cfg.diloco.ddp_warmup_steps) {}

void DiLoCoStrategy::step(int64_t t, double lr) {
  if (t < warmup_) {
    ddp_step(params_, comm_, grad_codec_, inner_, lr);
    if (t + 1 == warmup_) outer_.reset_global();
    return;
  }
  inner_.step(lr);
  if ((t + 1) % inner_steps_ == 0) outer_.sync();
}

void DiLoCoStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  outer_.visit_state(v);
  grad_codec_.visit_state(v);
}

}  // namespace atl
