// Baselines (ALGORITHMS.md section 1).
//
// Single: one worker, no communication: clip, inner AdamW.
//
// DDP (synchronous data parallel):
//   g_bar <- allreduce_mean(g_i)            // P elements every step, tag "grad"; codec ddp.codec
//   clip(g_bar, 1.0); theta <- AdamW(theta, g_bar)   // identical on all workers
//   ddp.overlap: the all-reduce is timed as PyTorch's DDP runs it, in buckets
//   (ddp.bucket_mb, ddp.first_bucket_mb) started as the backward pass
//   produces them (ALGORITHMS.md 7.3); the values are the same.
//
// Local SGD / FedAvg (McMahan et al. 2017; Stich 2019):
//   every step:    theta_i <- InnerOpt(theta_i, g_i)         // no communication
//   every H steps: theta_i <- allreduce_mean(theta_i)        // tag "params"
//   H = diloco.inner_steps. Equal to DiLoCo with outer SGD, lr_out = 1, mu = 0.
//   strategy.topology = ring | gossip replaces the all-reduce by mixing with
//   neighbours (ALGORITHMS.md 8.6); with H = 1 and a ring this is D-PSGD.
#pragma once

#include "atoll/strategy.h"
#include "compress/payload.h"
#include "strategy/inner_optimizer.h"
#include "strategy/topology.h"

namespace atl {

// [ddp]'s bucket caps (checked whichever method runs: the DDP warm-ups use them too).
void validate_ddp(const Config& cfg, std::vector<std::string>& errors);

class SingleStrategy : public Strategy {
 public:
  SingleStrategy(const Config& cfg, std::vector<at::Tensor> params, const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;

 private:
  InnerOptimizer inner_;
};

// DDP's gradient buckets as PyTorch assigns them (one dtype, one device):
// the tensors in reverse parameter order, the order the backward pass
// produces their gradients, fill a bucket until it holds at least its cap
// (first_cap_bytes for the first bucket, cap_bytes after; a tensor is never
// split). `numels`: elements per tensor in parameter order. Returns the
// elements of each bucket in the order they are filled.
std::vector<int64_t> ddp_buckets(const std::vector<int64_t>& numels, int64_t element_bytes, double first_cap_bytes,
                                 double cap_bytes);

// DDP's gradient average (DDP, and the warm-up phase of post-local SGD
// methods: DiLoCo's ddp_warmup_steps, PALSGD): one collective for all tensors
// (the gradients travel as one flat buffer), tag "grad", through `codec`;
// with ddp.overlap the all-reduce is bucketed and overlapped with the
// backward pass on the clock (sparse codecs excepted, see payload.h).
class GradientAverager {
 public:
  GradientAverager(const Config& cfg, const std::vector<at::Tensor>& params, const std::string& codec);
  // Replaces every worker's gradients by their mean.
  void average(const std::vector<at::Tensor>& params, Communicator& comm);
  // Elements per bucket in the order they are sent; empty without overlap.
  const std::vector<int64_t>& buckets() const { return buckets_; }
  void visit_state(StateVisitor& v) { codec_.visit_state(v); }

 private:
  PayloadCodec codec_;
  std::vector<int64_t> buckets_;
};

// One DDP step: the gradient average, then the inner optimizer.
void ddp_step(const std::vector<at::Tensor>& params, Communicator& comm, GradientAverager& grads, InnerOptimizer& inner,
              double lr);

class DdpStrategy : public Strategy {
 public:
  DdpStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
              const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer inner_;
  GradientAverager grads_;
};

class LocalSgdStrategy : public Strategy {
 public:
  LocalSgdStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                   const std::vector<std::string>& names = {});
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
