// Strategies: one object per worker, the only place a method's math lives.
//
// A strategy owns the worker's inner optimizer (and outer state), sees only
// the parameter list and its Communicator, and is called once per local step
// after backward. It never reads files, prints, or knows whether it runs in
// a simulation. Randomness all ranks must agree on comes from (run seed, step,
// tensor id); randomness private to a worker from (run seed, worker, step).
// Thread-safety: one Strategy per worker thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "atoll/state.h"

namespace atl {

// Something a strategy saw happen (a worker left or joined, a contribution
// was dropped); the driver writes each to the metrics as a "fault" event.
struct StrategyEvent {
  int64_t step = 0;
  std::string kind;  // leave | join | sync_dropped | nonfinite_dropped | no_contribution
  std::string detail;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Applies step t (0-based global inner step) with inner learning rate `lr`;
  // gradients of the parameters are already computed.
  virtual void step(int64_t t, double lr) = 0;
  // Whether step t needs a gradient. A method that skips the forward and
  // backward of some steps (PALSGD's pseudo-synchronisation) returns false:
  // the driver then draws no batch, charges no compute and calls step()
  // directly. Must give the same answer however often it is asked.
  virtual bool needs_gradient(int64_t /*t*/) const { return true; }
  // The model to evaluate if the method keeps a global one (DiLoCo's theta_g),
  // else nullptr (the driver then evaluates the workers' average).
  virtual const std::vector<at::Tensor>* global_params() const { return nullptr; }
  // Whether every worker holds the same global_params() after each sync (the
  // divergence check compares them). False for a method whose global copies
  // are per-worker by design: Streaming DiLoCo with eager updates steps each
  // worker's theta_g with that worker's own outer gradient.
  virtual bool shared_global() const { return true; }
  // Method-specific counters for the metrics (e.g. SPARTA's exchanges so
  // far). Read by the driver only while the worker is parked.
  virtual std::map<std::string, double> stats() const { return {}; }
  // Saves or restores everything the method carries from step to step
  // (inner optimizer, global model, outer moments, in-flight averages,
  // error-feedback residuals, counters), between steps, for checkpoints.
  // Resuming from it continues bitwise like the run that never stopped.
  virtual void visit_state(StateVisitor& v) = 0;
  // FLOPs of the method's own work since the last call, beyond the model's
  // forward and backward (DeMo's transforms, outer optimizer steps). The
  // modelled clock (network.compute_time = flops) charges them at the
  // device's rate, so a method's extra compute still costs time there.
  virtual double take_extra_flops() { return 0; }
  // Events since the last call (read by the driver while the worker is parked).
  virtual std::vector<StrategyEvent> take_events() { return {}; }
  // Outer syncs, for the observer's worker agreement (ALGORITHMS.md 9): the
  // first step u >= t at whose end the method pulls its workers' models
  // together (an outer sync, a fragment's), or -1 if none comes (the default:
  // no outer syncs). Right after a sync the workers agree by construction,
  // so agreement is measured before one. A pure function of the config: every
  // worker gives the same answer.
  virtual int64_t next_sync_step(int64_t /*t*/) const { return -1; }
  // The step from which the workers train apart (the end of a DDP warm-up);
  // agreement is measured against their common model there. 0: from the start.
  virtual int64_t local_start_step() const { return 0; }
};

// Builds the strategy named by cfg.strategy.name for one worker.
// `params` are the worker's model parameters (shared storage with the model);
// `names` their names ("h0.attn.weight"), used by methods that group
// parameters by transformer block (Streaming DiLoCo); may be empty.
std::unique_ptr<Strategy> make_strategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                                        const std::vector<std::string>& names = {});

}  // namespace atl
