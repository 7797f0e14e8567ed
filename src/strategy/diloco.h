// DiLoCo: Distributed Low-Communication training (Douillard et al., 2023,
// arXiv 2311.08105); ALGORITHMS.md section 2.
//
//   each worker: H inner AdamW steps on theta_i (state kept across rounds)
//   Delta_i <- theta_g - theta_i                        // pseudo-gradient
//   Delta   <- allreduce_mean(Delta_i)                  // tag "pseudo-grad", P elements
//   buf     <- mu * buf + Delta
//   theta_g <- theta_g - lr_out * (Delta + mu * buf)    // Nesterov (heavy ball: buf)
//   theta_i <- theta_g
//   then K - 1 more outer steps on Delta = 0 (buf <- mu buf; theta_g <- theta_g - lr_out mu buf):
//   PALSGD's authors' code runs its sync block once per micro-batch (ALGORITHMS.md 5(d))
//
// Config: diloco.inner_steps = H (500), diloco.outer_lr = lr_out (0.7),
// diloco.outer_momentum = mu (0.9), diloco.nesterov (true), diloco.codec
// (the pseudo-gradient's payload codec), diloco.ddp_warmup_steps (T_w: DDP
// steps first, post-local SGD as in PALSGD's baseline) and
// diloco.warmup_sync (gradients | none) for the warm-up of the whole family
// (strategy/ddp_warmup.h); rounds are counted on the global step, syncing
// after steps t with (t + 1) mod H = 0.
// diloco.outer_steps_per_sync = K (1), diloco.charge_extra_syncs (false: the
// K - 1 zero pseudo-gradients are not sent; true: each is all-reduced as the
// authors' code does, under ledger tag "pseudo-grad-extra").
#pragma once

#include <memory>

#include "atoll/strategy.h"
#include "compress/payload.h"
#include "strategy/ddp_warmup.h"
#include "strategy/faults.h"
#include "strategy/inner_optimizer.h"

namespace atl {

// The [diloco] section's rules (diloco_config.cpp): the outer step and the
// robust aggregation options, which every OuterSync user reads from [diloco].
void validate_diloco(const Config& cfg, std::vector<std::string>& errors);

// The first step u >= max(t, from) that ends a round of h steps ((u + 1) mod h
// = 0): when DiLoCo-style methods sync (Strategy::next_sync_step).
inline int64_t next_round_end(int64_t t, int64_t from, int64_t h) {
  const int64_t u = t > from ? t : from;
  return (u + h) / h * h - 1;
}

// The outer half of DiLoCo, shared by every method that adds an outer
// Nesterov step on the averaged pseudo-gradient (DiLoCo, SPARTA + DiLoCo).
// theta_g and buf are one flat buffer each; global_params() are views of it.
class OuterSync {
 public:
  // `lr_out`, `mu`, `nesterov`, the codec and the aggregator from `outer`;
  // codec settings, [faults] and the seed from `cfg`; feedback_decay: the
  // codec's error-feedback beta (PayloadCodec).
  OuterSync(const DiLoCoConfig& outer, const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
            double feedback_decay = 1.0);
  // Combines the pseudo-gradients of the sync after step t, steps theta_g,
  // resets the worker to it.
  //
  // With [faults] or a robust aggregator set, each worker appends a flag
  // "my contribution counts" to its payload: it is 0 when the worker is
  // away (nothing sent), its payload is lost (faults.drop_prob) or holds a
  // NaN/Inf (detected here and reported as an event). The mean is then the
  // sum over the flagged workers divided by their count, one all-reduce;
  // median and trimmed mean all-gather every payload (N-1 times the bytes)
  // and combine the flagged ones coordinate-wise. No contribution at all:
  // theta_g stays where it was.
  void sync(int64_t t);
  // Call at the start of step t: a worker rejoining at t gets theta_g
  // (broadcast, tag "join"; every rank takes part). Returns whether this
  // worker is away at step t (it then computes and sends nothing).
  bool begin_step(int64_t t);
  // Events since the last call (leave, join, dropped contributions).
  std::vector<StrategyEvent> take_events();
  // Whether this worker is away at step t (faults.absent).
  bool absent(int64_t t) const { return faults_.absent(comm_.rank(), t); }
  const std::vector<at::Tensor>* global_params() const { return &global_views_; }
  void visit_state(StateVisitor& v);
  // FLOPs of the outer steps since the last call (Strategy::take_extra_flops).
  double take_extra_flops() {
    const double f = extra_flops_;
    extra_flops_ = 0;
    return f;
  }

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  DiLoCoConfig cfg_;
  PayloadCodec codec_;
  at::Tensor global_;         // (P) theta_g
  at::Tensor momentum_;       // (P) outer buf (sgd) or Adam's first moment
  at::Tensor second_moment_;  // (P) Adam's second moment (adam only)
  int64_t outer_steps_ = 0;   // Adam's bias-correction step count
  double extra_flops_ = 0;    // outer-step work not yet taken by the clock
  std::vector<at::Tensor> global_views_;
  FaultPlan faults_;
  std::vector<StrategyEvent> events_;
  std::unique_ptr<PayloadCodec> extra_codec_;  // charge_extra_syncs: the zero payloads' codec (stateless)
  // One outer step on delta, then the K - 1 on a zero pseudo-gradient.
  void outer_step(const at::Tensor& delta);
  void apply_outer(const at::Tensor& delta);
  at::Tensor combine(at::Tensor delta, bool contributes, double wire_bytes, int64_t t, int64_t* contributors);
};

class DiLoCoStrategy : public Strategy {
 public:
  DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                 const std::vector<std::string>& names = {});
  // DiLoCo with another outer step (SparseLoCo): `outer` in place of
  // cfg.diloco's outer settings, feedback_decay as OuterSync's.
  DiLoCoStrategy(const Config& cfg, const DiLoCoConfig& outer, double feedback_decay, std::vector<at::Tensor> params,
                 Communicator& comm, const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  const std::vector<at::Tensor>* global_params() const override { return outer_.global_params(); }
  bool needs_gradient(int64_t t) const override { return warmup_.covers(t) || !outer_.absent(t); }
  std::vector<StrategyEvent> take_events() override { return outer_.take_events(); }
  double take_extra_flops() override { return outer_.take_extra_flops(); }
  int64_t next_sync_step(int64_t t) const override { return next_round_end(t, warmup_.steps(), inner_steps_); }
  int64_t local_start_step() const override { return warmup_.steps(); }

 private:
  InnerOptimizer inner_;
  OuterSync outer_;
  DdpWarmup warmup_;
  int64_t inner_steps_;
};

}  // namespace atl
