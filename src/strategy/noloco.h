// NoLoCo (Gensyn, arXiv 2506.10911); ALGORITHMS.md 8.1. No global collective:
//
//   every H inner steps, at sync round r:
//     groups <- split(permutation(N, seed = (run seed, r)), G)   // same on every rank
//     in my group:  phi_bar <- mean phi_j,  Delta_bar <- mean (theta_j - phi_j)
//                   (one exchange of [phi_i, theta_i - phi_i]: 2P values; tag "noloco")
//     m_i   <- beta m_i + a Delta_bar + a (phi_bar - phi_i)
//     phi_i <- phi_i + m_i ;  theta_i <- phi_i
//
// Delta here is progress (theta - phi), the opposite sign of DiLoCo's. With
// one group of all N workers NoLoCo is DiLoCo with heavy-ball momentum beta
// and lr a (m = a * buf by induction).
// Config: noloco.inner_steps H (50), outer_lr a (0.7), outer_momentum beta
// (0.5), group_size G (2).
#pragma once

#include "atoll/strategy.h"
#include "strategy/inner_optimizer.h"
#include "strategy/topology.h"

namespace atl {

// The [noloco] section's rules (noloco_config.cpp).
void validate_noloco(const Config& cfg, std::vector<std::string>& errors);

class NoLoCoStrategy : public Strategy {
 public:
  NoLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                 const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;

 private:
  void sync(int64_t round);

  std::vector<at::Tensor> params_;
  InnerOptimizer inner_;
  NoLoCoConfig cfg_;
  Mixer mixer_;
  at::Tensor phi_;       // (P) outer weights at the last sync
  at::Tensor momentum_;  // (P)
};

}  // namespace atl
