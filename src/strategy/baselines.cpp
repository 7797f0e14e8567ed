#include "strategy/baselines.h"

#include "strategy/flat.h"

namespace atl {

SingleStrategy::SingleStrategy(const Config& cfg, std::vector<at::Tensor> params, const std::vector<std::string>& names)
    : inner_(cfg.optim, params, names) {}

void SingleStrategy::step(int64_t, double lr) { inner_.step(lr); }

std::vector<int64_t> ddp_buckets(const std::vector<int64_t>& numels, int64_t element_bytes, double first_cap_bytes,
                                 double cap_bytes) {
  std::vector<int64_t> out;
  int64_t elements = 0;
  for (auto it = numels.rbegin(); it != numels.rend(); ++it) {
    if (*it == 0) continue;  // no gradient to send
    elements += *it;
    const double cap = out.empty() ? first_cap_bytes : cap_bytes;
    if (double(elements) * double(element_bytes) >= cap) {
      out.push_back(elements);
      elements = 0;
    }
  }
  if (elements > 0) out.push_back(elements);
  return out;
}

GradientAverager::GradientAverager(const Config& cfg, const std::vector<at::Tensor>& params, const std::string& codec)
    : codec_(codec, cfg.codec, numels_of(params)) {
  if (!cfg.ddp.overlap || params.empty()) return;
  constexpr double kMiB = 1024.0 * 1024.0;  // PyTorch's bucket_cap_mb counts MiB
  buckets_ = ddp_buckets(numels_of(params), params.front().element_size(), cfg.ddp.first_bucket_mb * kMiB,
                         cfg.ddp.bucket_mb * kMiB);
}

void GradientAverager::average(const std::vector<at::Tensor>& params, Communicator& comm) {
  at::Tensor grads = flatten_grads(params);
  mean_all_reduce(comm, codec_, grads, "grad", buckets_);
  assign_grads(grads, params);
}

DdpStrategy::DdpStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                         const std::vector<std::string>& names)
    : params_(params), comm_(comm), inner_(cfg.optim, params, names), grads_(cfg, params, cfg.ddp.codec) {}

void ddp_step(const std::vector<at::Tensor>& params, Communicator& comm, GradientAverager& grads, InnerOptimizer& inner,
              double lr) {
  grads.average(params, comm);
  inner.step(lr);
}

void DdpStrategy::step(int64_t, double lr) { ddp_step(params_, comm_, grads_, inner_, lr); }

LocalSgdStrategy::LocalSgdStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                                   const std::vector<std::string>& names)
    : params_(params),
      comm_(comm),
      inner_(cfg.optim, params, names),
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
  grads_.visit_state(v);
}

void LocalSgdStrategy::visit_state(StateVisitor& v) { inner_.visit_state(v); }

}  // namespace atl
