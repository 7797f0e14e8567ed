// The divergence check of real runs (as PCCL's): the ranks of a method with a
// global model must hold the same theta_g after every sync; a seed or an
// order bug that breaks this trains N different models while every figure
// looks plausible (one went unnoticed in a public DiLoCo trainer). After each
// sync every rank all-gathers a SHA-256 (OpenSSL) of each of theta_g's
// tensors (ledger tag "divergence-check", 32 bytes a tensor, charged like any
// collective) and every rank stops at the first mismatch with the same
// message, naming the step, the ranks and the tensor.
//
// Only theta_g is compared: the outer momentum is as shared, but a mismatch
// in it reaches theta_g at the next sync. run.divergence_check: auto (real
// runs), on (the simulator too), off. A method whose workers keep their own
// theta_g by design (Strategy::shared_global() false: Streaming DiLoCo with
// eager updates) has nothing the ranks must agree on bitwise, so the check
// is off for it whatever the setting (it would stop every such run at its
// first sync); faults.perturb_global still applies.
//
// faults.perturb_global makes a rank's theta_g wrong on purpose (after the
// update of the step it names, counted from 1 as the run reports steps), to
// see the check stop a run.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"

namespace atl {

class DivergenceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class DivergenceCheck {
 public:
  // `names`: the model's parameter names, in parameter order (theta_g's
  // tensors are the parameters'); `real`: whether this is a real run;
  // `shared_global`: the strategy's Strategy::shared_global() (false: no check).
  DivergenceCheck(const Config& cfg, std::vector<std::string> names, int64_t rank, bool real,
                  bool shared_global = true);
  // Call after the strategy's update of step t. `global`: theta_g (null for
  // a method without one); `synced`: whether step t ended with a sync.
  // Applies faults.perturb_global, then compares when synced. Throws
  // DivergenceError on a mismatch; every rank throws the same one.
  void after_update(Communicator& comm, const std::vector<at::Tensor>* global, bool synced, int64_t t);
  bool enabled() const { return enabled_; }

 private:
  size_t tensor_index(const std::string& name) const;

  bool enabled_;
  std::vector<std::string> names_;
  int64_t rank_;
  std::vector<Perturbation> perturbations_;  // this rank's
};

}  // namespace atl
