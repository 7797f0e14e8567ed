// DiLoCo: Distributed Low-Communication training (Douillard et al., 2023,
// arXiv 2311.08105); ALGORITHMS.md section 2.
//
//   each worker: H inner AdamW steps on theta_i (state kept across rounds)
//   Delta_i <- theta_g - theta_i                        // pseudo-gradient
//   Delta   <- allreduce_mean(Delta_i)                  // tag "pseudo-grad", P elements
//   buf     <- mu * buf + Delta
//   theta_g <- theta_g - lr_out * (Delta + mu * buf)    // Nesterov (heavy ball: buf)
//   theta_i <- theta_g
//
// Config: diloco.inner_steps = H (500), diloco.outer_lr = lr_out (0.7),
// diloco.outer_momentum = mu (0.9), diloco.nesterov (true).
#pragma once

#include "atoll/strategy.h"
#include "strategy/inner_optimizer.h"

namespace atl {

// The outer half of DiLoCo, shared by every method that adds an outer
// Nesterov step on the averaged pseudo-gradient (DiLoCo, SPARTA + DiLoCo).
// theta_g and buf are one flat buffer each; global_params() are views of it.
class OuterSync {
 public:
  OuterSync(const DiLoCoConfig& cfg, std::vector<at::Tensor> params, Communicator& comm);
  // All-reduces the pseudo-gradient, steps theta_g, resets the worker to it.
  void sync();
  const std::vector<at::Tensor>* global_params() const { return &global_views_; }

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  DiLoCoConfig cfg_;
  at::Tensor global_;    // (P) theta_g
  at::Tensor momentum_;  // (P) outer buf
  std::vector<at::Tensor> global_views_;
};

class DiLoCoStrategy : public Strategy {
 public:
  DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm);
  void step(int64_t t, double lr) override;
  const std::vector<at::Tensor>* global_params() const override { return outer_.global_params(); }

 private:
  InnerOptimizer inner_;
  OuterSync outer_;
  int64_t inner_steps_;
};

}  // namespace atl
