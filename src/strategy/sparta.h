// SPARTA: sparse parameter averaging (Beton et al. 2025); ALGORITHMS.md 4.
//
//   each step:   theta_i <- AdamW(theta_i, g_i)                 // local step first
//   every k steps, unless the exchange faults (prob. fault_rate, same on all ranks):
//     M  <- IndexSelector(seed, step)      // ~p*P entries, identical on every rank: no index traffic
//     v_i <- theta_i[M]                    // one contiguous buffer for all tensors
//     v   <- mix(v_i)                      // global all-reduce mean | ring | gossip; tag "sparse"
//     at step t + d: theta_i[M] <- v       // "overwrite" (reference), or += v - v_i ("delta")
//
// SPARTA + DiLoCo adds DiLoCo's outer step every H steps, after the sparse
// exchange of that step (gym's order: inner -> sparse -> outer), and
// DiLoCo's DDP warm-up (diloco.ddp_warmup_steps, strategy/ddp_warmup.h):
// neither the sparse exchanges nor the outer steps start before it ends.
//
// Config: sparta.p (0.005), selector, interval k (1), delay d (0), apply,
// fault_rate (0), p_schedule, p_min_factor (0.1); strategy.topology;
// diloco.* for the outer step of sparta_diloco.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>

#include "atoll/strategy.h"
#include "compress/payload.h"
#include "strategy/ddp_warmup.h"
#include "strategy/diloco.h"
#include "strategy/inner_optimizer.h"
#include "strategy/topology.h"

namespace atl {

// SPARTA's p schedule (sparta.p_schedule; pure arithmetic shared by the
// config rules and the strategy, in sparta_config.cpp). "cosine": p_max for
// the first `warmup` steps, then a cosine from p_max down to p_min =
// p_min_factor * p at the last step, with p_max solved so that the mean over
// the `steps` steps is exactly p.
double sparta_peak_p(const SpartaConfig& c, int64_t steps, int64_t warmup);
// p at step t (0-based) of a `steps`-step run.
double sparta_p_at(const SpartaConfig& c, int64_t t, int64_t steps, int64_t warmup);

// The [sparta] section's rules (the strategy table's validate for sparta).
void validate_sparta(const Config& cfg, std::vector<std::string>& errors);

// The entries one exchange averages. Entries of tensor j are
// index[begin[j] .. begin[j+1]), ascending positions in its flattened values.
struct Selection {
  std::vector<int64_t> begin;
  std::vector<int64_t> index;
  int64_t size() const { return static_cast<int64_t>(index.size()); }
};

// Chooses the entries of each exchange from shared seeds alone.
class IndexSelector {
 public:
  virtual ~IndexSelector() = default;
  // Entries for exchange number `exchange` (0, 1, ...), made at step `step`
  // with fraction p. Every rank gets the same answer for the same arguments.
  virtual Selection select(int64_t step, int64_t exchange, double p) = 0;
};

// kind: random      Bernoulli(p) per element, drawn from (seed, step, tensor)
//       partitioned each tensor's elements permuted into ceil(1/p) parts, one
//                   part per exchange, re-shuffled after every full cycle
//       sequential  one fixed permutation per tensor, part (exchange mod ceil(1/p))
//       layerwise   the budget p*P on one tensor at a time, in order: tensor j
//                   takes ceil(n_j / (p*P)) exchanges, re-shuffled every cycle
// The three cyclic selectors average every element exactly once per cycle.
std::unique_ptr<IndexSelector> make_index_selector(const std::string& kind, std::vector<int64_t> tensor_sizes, double p,
                                                   uint64_t seed);

// The seed SparseAverager gives its selector for run seed `run_seed`.
uint64_t sparta_selector_seed(uint64_t run_seed);

// The selected entries of `params` as one contiguous (size) buffer, and back.
at::Tensor gather_selected(const std::vector<at::Tensor>& params, const Selection& sel);
void scatter_selected(const std::vector<at::Tensor>& params, const Selection& sel, const at::Tensor& values);
// params[sel] += values.
void add_selected(const std::vector<at::Tensor>& params, const Selection& sel, const at::Tensor& values);

// The sparse exchange, called after each local step.
class SparseAverager {
 public:
  SparseAverager(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm);
  // Exchanges if step t is due, then applies every average due by step t.
  void after_step(int64_t t);
  std::map<std::string, double> stats() const;
  void visit_state(StateVisitor& v);

 private:
  struct InFlight {
    int64_t apply_at = 0;
    Selection selection;
    at::Tensor values;  // the mixed average once `mix` is waited on
    at::Tensor sent;    // delta mode: this worker's values when sent
    PendingMix mix;
  };
  void apply(InFlight& f);

  SpartaConfig cfg_;
  uint64_t seed_;
  int64_t steps_, warmup_;
  int64_t total_params_ = 0;
  std::vector<at::Tensor> params_;
  std::unique_ptr<IndexSelector> selector_;
  Mixer mixer_;
  PayloadCodec codec_;
  std::deque<InFlight> in_flight_;
  int64_t exchanges_ = 0, skipped_ = 0, applied_ = 0;
  double selected_ = 0;
};

class SpartaStrategy : public Strategy {
 public:
  SpartaStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                 const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  std::map<std::string, double> stats() const override { return sparse_.stats(); }

 private:
  InnerOptimizer inner_;
  SparseAverager sparse_;
};

class SpartaDiLoCoStrategy : public Strategy {
 public:
  SpartaDiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                       const std::vector<std::string>& names = {});
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  const std::vector<at::Tensor>* global_params() const override { return outer_.global_params(); }
  std::map<std::string, double> stats() const override { return sparse_.stats(); }
  std::vector<StrategyEvent> take_events() override { return outer_.take_events(); }
  double take_extra_flops() override { return outer_.take_extra_flops(); }
  // The outer syncs; SPARTA's sparse exchanges every step only nudge the workers.
  int64_t next_sync_step(int64_t t) const override { return next_round_end(t, warmup_.steps(), inner_steps_); }
  int64_t local_start_step() const override { return warmup_.steps(); }

 private:
  InnerOptimizer inner_;
  SparseAverager sparse_;
  OuterSync outer_;
  DdpWarmup warmup_;  // before any sparse exchange or outer step
  int64_t inner_steps_;
};

}  // namespace atl
