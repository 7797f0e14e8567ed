// A pass through a model that must leave no trace on the run: it puts the
// default CPU generator's state (dropout draws from it) and the model's
// training mode back however the pass ends (a module may throw). Used to
// count a model's FLOPs (flop_count.cpp) and to capture the shapes of its
// products before a run starts (train/gemm_choice.cpp).
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include <mutex>

#include "atoll/model.h"

namespace atl {

class DryPass {
 public:
  explicit DryPass(Model& model)
      : model_(model), was_training_(model.is_training()), gen_(at::detail::getDefaultCPUGenerator()) {
    std::lock_guard<std::mutex> lock(gen_.mutex());
    rng_state_ = gen_.get_state();
  }
  ~DryPass() {
    model_.train(was_training_);
    std::lock_guard<std::mutex> lock(gen_.mutex());
    gen_.set_state(rng_state_);
  }
  DryPass(const DryPass&) = delete;
  DryPass& operator=(const DryPass&) = delete;

 private:
  Model& model_;
  bool was_training_;
  at::Generator gen_;
  at::Tensor rng_state_;
};

}  // namespace atl
