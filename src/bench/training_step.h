// One bench worker's training step, as the driver's worker loop runs it:
// forward and backward of the configured model on fixed random tokens (in
// the configured precision, micro-batched across the worker's threads), then
// strategy "single" (clip + the optimizer).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/strategy.h"

namespace atl::bench {

class TrainingStep {
 public:
  // Call on the thread that will run the steps: sets its compute threads.
  TrainingStep(const Config& cfg, int64_t threads);
  void run(int64_t t);
  // train.gemm = auto: measures the routes of this step's products and sets
  // them process-wide (train/gemm_choice.h). Call before any step runs.
  void route_products();
  double flops_per_token() const { return model_->flops_per_token(); }
  double tokens_per_step() const;
  const std::string& precision() const { return precision_; }

 private:
  Config cfg_;
  std::string precision_;
  std::shared_ptr<Model> model_;
  InProcessGroup group_{1};
  std::unique_ptr<Strategy> strategy_;
  std::vector<at::Tensor> params_;
  at::Tensor x_, y_;
  int64_t micro_ = 1;
  int64_t threads_ = 1;
};

}  // namespace atl::bench
