// DES-LOC: Desynced Low-Communication training (Iacob et al. 2025, arXiv
// 2505.22549); ALGORITHMS.md 8.9. Local Adam whose state is averaged across
// workers piece by piece, each on its own period:
//
//   each worker: one inner step (AdamW, or Muon with optim.name = muon)
//   every K_x steps: theta_i <- mean_j theta_j      (tag "params")
//   every K_u steps: m_i     <- mean_j m_j          (tag "first-moment")
//   every K_v steps: v_i     <- mean_j v_j          (tag "second-moment")
//
// counted as (t + 1) mod K = 0, in that order when periods coincide, with
// K_u = desloc.first_moment_factor x K_x and K_v = desloc.second_moment_factor
// x K_x (the paper recommends 3 and 6; 0 = never, which is Local SGD with
// H = K_x, bit for bit). No outer optimizer: the averages are the update.
#pragma once

#include <vector>

#include "atoll/strategy.h"
#include "strategy/diloco.h"  // next_round_end
#include "strategy/inner_optimizer.h"

namespace atl {

// The [desloc] section's rules (desloc_config.cpp).
void validate_desloc(const Config& cfg, std::vector<std::string>& errors);

class DesLocStrategy : public Strategy {
 public:
  DesLocStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                 const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override { inner_.visit_state(v); }
  int64_t next_sync_step(int64_t t) const override { return next_round_end(t, 0, param_period_); }

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  InnerOptimizer inner_;
  int64_t param_period_, first_period_, second_period_;  // K_x, K_u, K_v (0: never)
};

}  // namespace atl
