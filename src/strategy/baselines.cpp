#include "strategy/baselines.h"

#include "strategy/flat.h"

namespace atl {

SingleStrategy::SingleStrategy(const Config& cfg, std::vector<at::Tensor> params)
    : inner_(cfg.optim, params) {}

void SingleStrategy::step(int64_t, double lr) { inner_.step(lr); }

void average_gradients(const std::vector<at::Tensor>& params, Communicator& comm, PayloadCodec& codec) {
  at::Tensor grads = flatten_grads(params);
  mean_all_reduce(comm, codec, grads, "grad");
  assign_grads(grads, params);
}

DdpStrategy::DdpStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : params_(params), comm_(comm), inner_(cfg.optim, params), codec_(cfg.ddp.codec, cfg.codec) {}

void ddp_step(const std::vector<at::Tensor>& params, Communicator& comm, PayloadCodec& codec,
              InnerOptimizer& inner, double lr) {
  average_gradients(params, comm, codec);
  inner.step(lr);
}

void DdpStrategy::step(int64_t, double lr) { ddp_step(params_, comm_, codec_, inner_, lr); }

LocalSgdStrategy::LocalSgdStrategy(const Config& cfg, std::vector<at::Tensor> params,
                                   Communicator& comm)
    : params_(params),
      comm_(comm),
      inner_(cfg.optim, params),
      mixer_(parse_topology(cfg.strategy.topology), comm, static_cast<uint64_t>(cfg.run.seed)),
      inner_steps_(cfg.diloco.inner_steps) {}

void LocalSgdStrategy::step(int64_t t, double lr) {
  inner_.step(lr);
  if ((t + 1) % inner_steps_ != 0) return;
  at::Tensor theta = flatten_values(params_);
  mixer_.mix(theta, (t + 1) / inner_steps_ - 1, "params");
  assign_values(theta, params_);
}

void SingleStrategy::visit_state(StateVisitor& v) { inner_.visit_state(v); }

void DdpStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  codec_.visit_state(v);
}

void LocalSgdStrategy::visit_state(StateVisitor& v) { inner_.visit_state(v); }

}  // namespace atl
