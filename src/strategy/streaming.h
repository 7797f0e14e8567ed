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
// (strided), overlap tau (1), alpha (0.5), codec (fp4); H, lr_out, mu,
// Nesterov and the DDP warm-up (ddp_warmup_steps T_w, warmup_sync;
// strategy/ddp_warmup.h) from [diloco]. The schedule above is on the global
// step t whatever T_w: no fragment prepares before T_w, and a fragment whose
// prepare would have fallen inside the warm-up skips that perform, so every
// fragment syncs at the steps it would without a warm-up (none is skipped
// when T_w is a multiple of H, as tau < H/F). With F = 1, tau = 0, alpha = 0
// and codec fp32 it is DiLoCo.
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
    at::Tensor delta;  // in flight between prepare and perform
    Work work;
    int64_t syncs = 0;
  };
  void prepare(Fragment& f, size_t index);
  void perform(Fragment& f);

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
