// Streaming DiLoCo (Douillard et al. 2025, arXiv 2501.18512); ALGORITHMS.md 3.
//
// DiLoCo, but the parameters are cut into F fragments of `fragment_blocks`
// transformer blocks (strided: block l in fragment l mod F; sequential:
// consecutive blocks; embeddings go with the first fragment, the final norm
// and head with the last). Fragment p syncs once per H steps at offset
// o_p = (p + 1) H / F - 1, so one fragment syncs every H / F steps:
//
//   after step t with (t - o_p + tau) mod H = 0:            "prepare", tau steps early
//     Delta_i[p] <- theta_g[p] - theta_i[p];  start all-reduce of codec(Delta_i[p])   // tag "fragment/p"
//   after step t with (t - o_p) mod H = 0:                   "perform"
//     wait; buf[p] <- mu buf[p] + Delta[p]
//     theta_g[p] <- theta_g[p] - lr_out (Delta[p] + mu buf[p])      // Nesterov, this fragment only
//     theta_i[p] <- (1 - alpha) theta_g[p] + alpha theta_i[p]       // theta_i[p]: current local values
//
// The all-reduce is non-blocking: the tau inner steps in between hide its
// time on the virtual clock. Config: streaming.fragment_blocks (3), pattern
// (strided), overlap tau (1), alpha (0.5), codec (fp4), eager (false); H, lr_out, mu,
// Nesterov and the DDP warm-up (ddp_warmup_steps T_w, warmup_sync;
// strategy/ddp_warmup.h) from [diloco]. The schedule above is on the global
// step t whatever T_w: no fragment prepares before T_w, and a fragment whose
// prepare would have fallen inside the warm-up skips that perform, so every
// fragment syncs at the steps it would without a warm-up (none is skipped
// when T_w is a multiple of H, as tau < H/F). With F = 1, tau = 0, alpha = 0
// and codec fp32 it is DiLoCo.
//
// Eager updates (streaming.eager; Kale, Douillard, Donchev 2025, arXiv
// 2502.12996; ALGORITHMS.md 3.2, 8.10): a fragment's all-reduce overlaps the
// whole next round (tau must be 0: no prepare), and each worker steps with
// its own fresh outer gradient in place of the mean still in flight:
//   after step t with (t - o_p) mod H = 0:
//     Delta_i[p] <- theta_g_i[p] - theta_i[p]                            // fresh, this worker's
//     wait the all-reduce started at p's previous sync: mean_prev[p]
//     Delta~ <- mean_prev[p] + (Delta_i[p] - sent_i[p]) / N
//            =  (1/N) (Delta_i^(r) + sum_{j != i} Delta_j^(r-1))         // the paper's eager estimate
//     outer Nesterov step on theta_g_i[p] with Delta~, then the alpha merge, as above
//     start the all-reduce of codec(Delta_i[p]), waited at p's next sync;
//     sent_i[p] <- this worker's decoded payload (Delta_i[p] for fp32)
// sent_i is what this worker put into the mean, so the estimate holds the
// other workers' payloads exactly as received and this worker's own
// uncompressed. First round of a fragment (nothing in flight): mean_prev =
// sent_i = 0, Delta~ = Delta_i / N. So every worker's outer gradient of
// every round enters theta_g once (its own at once, the others' a round
// later) and no sync ever blocks; waiting for the first round's own
// all-reduce instead would apply the other workers' first outer gradients
// twice (now and in the second round's estimate). The last round's
// all-reduces are still in flight when training ends: their bytes count,
// their values are never applied. With N = 1 the estimate is Delta_i: eager
// equals tau = 0. Each worker's theta_g then differs from the others' (by
// lr_out / N times the differences of fresh outer gradients), so
// shared_global() is false: the divergence check does not apply and
// strategy.eval_model = global evaluates worker 0's theta_g. Stability: the
// (N - 1) / N of the outer gradient that arrives a round late meets the
// outer momentum; in a small run (compare.toml, N = 4, H = 50) DiLoCo's
// Nesterov lr_out 0.7, mu 0.9 made theta_g oscillate (final loss 3.44
// against 2.12 with tau = 1), while mu = 0, lr_out 1 trained (2.27 against 2.20).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "atoll/strategy.h"
#include "compress/payload.h"
#include "strategy/ddp_warmup.h"
#include "strategy/inner_optimizer.h"

namespace atl {

// The [streaming] section's rules and the fragment schedule's fit with H
// (streaming_config.cpp).
void validate_streaming(const Config& cfg, std::vector<std::string>& errors);

// Fragment of each parameter. `names` are the model's parameter names
// ("h3.attn.weight", "transformer.h.3.attn.c_attn.weight"); `block_pattern`
// (streaming.block_pattern) finds the block number in a name. Parameters
// outside any block before the first block belong to the first fragment,
// after the last to the last. Without block names (MLPs, tests) every
// tensor counts as one block.
std::vector<int64_t> assign_fragments(const std::vector<std::string>& names, int64_t tensors, int64_t fragment_blocks,
                                      const std::string& pattern, const std::string& block_pattern, int64_t* fragments);

class StreamingDiLoCoStrategy : public Strategy {
 public:
  StreamingDiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                          const std::vector<std::string>& names);
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  const std::vector<at::Tensor>* global_params() const override { return &global_; }
  // Eager updates: each worker's theta_g takes its own outer gradient.
  bool shared_global() const override { return !cfg_.eager; }
  std::map<std::string, double> stats() const override;
  // The next fragment's merge ("perform"): one fragment syncs every H / F steps.
  int64_t next_sync_step(int64_t t) const override;
  int64_t local_start_step() const override { return warmup_.steps(); }
  double take_extra_flops() override {
    const double f = extra_flops_;
    extra_flops_ = 0;
    return f;
  }

 private:
  struct Fragment {
    std::vector<size_t> members;  // parameter indices
    int64_t offset = 0;           // o_p
    std::unique_ptr<PayloadCodec> codec;
    at::Tensor delta;  // in flight between prepare and perform (eager: from one sync to the next)
    Work work;
    at::Tensor sent;  // eager: this worker's decoded payload in `delta`'s all-reduce
    int64_t syncs = 0;
  };
  // (P_f) theta_g[p] - theta_i[p] over the fragment's members, concatenated.
  at::Tensor outer_gradient(const Fragment& f) const;
  void prepare(Fragment& f, size_t index);
  void perform(Fragment& f);
  void eager_sync(Fragment& f, size_t index);
  // Outer Nesterov step on theta_g[p] with `delta`, then the alpha merge.
  void outer_step(const Fragment& f, const at::Tensor& delta);

  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer inner_;
  DiLoCoConfig outer_;
  StreamingConfig cfg_;
  std::vector<at::Tensor> global_;    // theta_g per parameter
  std::vector<at::Tensor> momentum_;  // buf per parameter
  DdpWarmup warmup_;                  // before any fragment's sync
  std::vector<Fragment> fragments_;
  double extra_flops_ = 0;  // outer-step work not yet taken by the clock
};

}  // namespace atl
