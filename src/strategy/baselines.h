// Baselines (ALGORITHMS.md section 1).
//
// Single: one worker, no communication: clip, inner AdamW.
//
// DDP (synchronous data parallel):
//   g_bar <- allreduce_mean(g_i)            // P elements every step, tag "grad"; codec ddp.codec
//   clip(g_bar, 1.0); theta <- AdamW(theta, g_bar)   // identical on all workers
//
// Local SGD / FedAvg (McMahan et al. 2017; Stich 2019):
//   every step:    theta_i <- InnerOpt(theta_i, g_i)         // no communication
//   every H steps: theta_i <- allreduce_mean(theta_i)        // tag "params"
//   H = diloco.inner_steps. Equal to DiLoCo with outer SGD, lr_out = 1, mu = 0.
//   strategy.topology = ring | gossip replaces the all-reduce by mixing with
//   neighbours (ALGORITHMS.md 8.6); with H = 1 and a ring this is D-PSGD.
#pragma once

#include "atoll/strategy.h"
#include "strategy/inner_optimizer.h"
#include "compress/payload.h"
#include "strategy/topology.h"

namespace atl {

// strategy.name = single needs strategy.workers = 1 (baselines_config.cpp).
void validate_single(const Config& cfg, std::vector<std::string>& errors);

class SingleStrategy : public Strategy {
 public:
  SingleStrategy(const Config& cfg, std::vector<at::Tensor> params);
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;

 private:
  InnerOptimizer inner_;
};

// Replaces every worker's gradients by their mean: one collective for all
// tensors (the gradients travel as one flat buffer), tag "grad".
void average_gradients(const std::vector<at::Tensor>& params, Communicator& comm, PayloadCodec& codec);
// One DDP step: the gradient average, then the inner optimizer (also the
// warm-up phase of post-local SGD methods: DiLoCo's ddp_warmup_steps, PALSGD).
void ddp_step(const std::vector<at::Tensor>& params, Communicator& comm, PayloadCodec& codec,
              InnerOptimizer& inner, double lr);

class DdpStrategy : public Strategy {
 public:
  DdpStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm);
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer inner_;
  PayloadCodec codec_;
};

class LocalSgdStrategy : public Strategy {
 public:
  LocalSgdStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm);
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer inner_;
  Mixer mixer_;
  int64_t inner_steps_;  // H
};

}  // namespace atl
