#include "strategy/ddp_warmup.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace atl {

DdpWarmup::DdpWarmup(const Config& cfg, int64_t steps, bool average_gradients, std::vector<at::Tensor> params,
                     Communicator& comm, InnerOptimizer& inner, const std::vector<at::Tensor>* global)
    : steps_(steps),
      average_gradients_(average_gradients),
      params_(std::move(params)),
      comm_(comm),
      inner_(inner),
      global_(global),
      grads_(cfg, params_, "fp32") {
  if (global_ == nullptr || global_->size() != params_.size())
    throw std::logic_error("DdpWarmup: the global model must hold one tensor per parameter");
}

DdpWarmup DdpWarmup::of_diloco(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               InnerOptimizer& inner, const std::vector<at::Tensor>* global) {
  return DdpWarmup(cfg, cfg.diloco.ddp_warmup_steps, cfg.diloco.warmup_sync != "none", std::move(params), comm, inner,
                   global);
}

bool DdpWarmup::step(int64_t t, double lr) {
  if (!covers(t)) return false;
  if (average_gradients_) {
    ddp_step(params_, comm_, grads_, inner_, lr);
  } else {
    inner_.step(lr);
  }
  at::NoGradGuard no_grad;
  for (size_t k = 0; k < params_.size(); ++k) (*global_)[k].copy_(params_[k]);
  return true;
}

}  // namespace atl
