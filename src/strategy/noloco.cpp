#include "strategy/noloco.h"

#include <ATen/ATen.h>

#include "strategy/flat.h"

namespace atl {

NoLoCoStrategy::NoLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names)
    : params_(params),
      inner_(cfg.optim, params, names),
      cfg_(cfg.noloco),
      mixer_(Topology::Gossip, comm, static_cast<uint64_t>(cfg.run.seed), cfg.noloco.group_size) {
  phi_ = flatten_values(params_);
  momentum_ = at::zeros_like(phi_);
}

void NoLoCoStrategy::step(int64_t t, double lr) {
  inner_.step(lr);
  if ((t + 1) % cfg_.inner_steps == 0) sync((t + 1) / cfg_.inner_steps - 1);
}

void NoLoCoStrategy::sync(int64_t round) {
  at::NoGradGuard no_grad;
  const int64_t n = phi_.numel();
  at::Tensor both = at::cat({phi_, flatten_values(params_) - phi_});  // [phi_i, Delta_i]
  mixer_.mix(both, round, "noloco");
  const at::Tensor phi_bar = both.narrow(0, 0, n), delta_bar = both.narrow(0, n, n);
  const double a = cfg_.outer_lr;
  momentum_.mul_(cfg_.outer_momentum).add_(delta_bar, a).add_(phi_bar - phi_, a);
  phi_.add_(momentum_);
  assign_values(phi_, params_);
}

void NoLoCoStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  v.tensor("phi", phi_);
  v.tensor("momentum", momentum_);
}

}  // namespace atl
