// The DDP warm-up of the DiLoCo family (post-local SGD, Lin et al. 2020;
// ALGORITHMS.md 2 and 5): diloco, sparta_diloco and streaming read its length
// from diloco.ddp_warmup_steps, palsgd from palsgd.ddp_warmup_steps (the
// strategy table's warm-up key column names it). The presets use it as the
// stand-in for the pretrained start the papers begin from.
//
//   t < T_w:   g <- allreduce_mean(g_i)       warmup_sync = gradients (uncompressed, tag "grad", [ddp] overlap)
//              g <- g_i                       warmup_sync = none (no communication)
//              theta_i <- InnerOpt(theta_i, g)
//              theta_g <- theta_i              // the global model follows the worker
//   t >= T_w:  the method itself, from theta_g = theta_i, its outer momentum
//              still zero (no outer step has run) and its rounds counted on
//              the global step t, as if the warm-up steps had been its own.
//
// theta_g follows the worker at every warm-up step, not only at the last, so
// whatever reads the global model meanwhile (the evaluation, checkpoints)
// sees the model being trained. With gradients the workers' models are
// bitwise identical (DDP), so no average is needed at the switch; with none
// each worker's theta_g is its own model, as the reference DiLoCo baseline's
// outer_model.load_state_dict(model) on each rank (Pseudo-Asynchronous-LocalSGD,
// post_localsgd_decoupled.py).
#pragma once

#include <vector>

#include "atoll/strategy.h"
#include "strategy/baselines.h"
#include "strategy/inner_optimizer.h"

namespace atl {

class DdpWarmup {
 public:
  // `steps`: T_w (0: no warm-up); `average_gradients`: false for
  // diloco.warmup_sync = none. `inner` is the method's inner optimizer (its
  // state carries on after the warm-up); `global` the method's theta_g, one
  // tensor per parameter, read at each step (a checkpoint may reload it in place).
  DdpWarmup(const Config& cfg, int64_t steps, bool average_gradients, std::vector<at::Tensor> params,
            Communicator& comm, InnerOptimizer& inner, const std::vector<at::Tensor>* global);
  // The warm-up of a method that reads [diloco] (diloco, sparta_diloco,
  // streaming): diloco.ddp_warmup_steps steps, diloco.warmup_sync.
  static DdpWarmup of_diloco(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                             InnerOptimizer& inner, const std::vector<at::Tensor>* global);
  // Whether step t is a warm-up step.
  bool covers(int64_t t) const { return t < steps_; }
  // T_w: the first step the method takes itself.
  int64_t steps() const { return steps_; }
  // Takes step t and returns true if it is a warm-up step; returns false,
  // having done nothing, once the method's own steps have begun.
  bool step(int64_t t, double lr);
  // The gradient codec's state (none for fp32, which the warm-up always uses).
  void visit_state(StateVisitor& v) { grads_.visit_state(v); }

 private:
  int64_t steps_;
  bool average_gradients_;
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer& inner_;
  const std::vector<at::Tensor>* global_;
  GradientAverager grads_;
};

}  // namespace atl
