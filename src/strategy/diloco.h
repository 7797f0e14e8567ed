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
// diloco.outer_momentum = mu (0.9), diloco.nesterov (true), diloco.codec
// (the pseudo-gradient's payload codec), diloco.ddp_warmup_steps (T_w: DDP
// steps first, post-local SGD as in PALSGD's baseline; rounds are then
// counted on the global step, syncing after steps t with (t + 1) mod H = 0).
// Workers, then: theta_i <- theta_g, with theta_g snapshot at the end of the
// warm-up (DDP keeps replicas bitwise identical, so no average is needed).
#pragma once

#include "atoll/strategy.h"
#include "strategy/inner_optimizer.h"
#include "strategy/payload.h"

namespace atl {

// The outer half of DiLoCo, shared by every method that adds an outer
// Nesterov step on the averaged pseudo-gradient (DiLoCo, SPARTA + DiLoCo).
// theta_g and buf are one flat buffer each; global_params() are views of it.
class OuterSync {
 public:
  // `lr_out`, `mu` and `nesterov` from cfg; the codec from cfg.codec.
  OuterSync(const DiLoCoConfig& cfg, const CodecConfig& codec, std::vector<at::Tensor> params,
            Communicator& comm);
  // All-reduces the pseudo-gradient, steps theta_g, resets the worker to it.
  void sync();
  // theta_g <- the worker's current parameters (after a DDP warm-up).
  void reset_global();
  const std::vector<at::Tensor>* global_params() const { return &global_views_; }
  void visit_state(StateVisitor& v);

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  DiLoCoConfig cfg_;
  PayloadCodec codec_;
  at::Tensor global_;    // (P) theta_g
  at::Tensor momentum_;  // (P) outer buf (sgd) or Adam's first moment
  at::Tensor second_moment_;  // (P) Adam's second moment (adam only)
  int64_t outer_steps_ = 0;   // Adam's bias-correction step count
  std::vector<at::Tensor> global_views_;
};

class DiLoCoStrategy : public Strategy {
 public:
  DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm);
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  const std::vector<at::Tensor>* global_params() const override { return outer_.global_params(); }

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer inner_;
  OuterSync outer_;
  PayloadCodec grad_codec_;  // DDP warm-up: uncompressed gradients
  int64_t inner_steps_, warmup_;
};

}  // namespace atl
