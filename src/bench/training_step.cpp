#include "bench/training_step.h"

#include <ATen/ATen.h>

#include "bench/measure.h"
#include "model/gemm.h"
#include "model/precision.h"
#include "train/gemm_choice.h"
#include "train/gradients.h"
#include "train/threads.h"

namespace atl::bench {

TrainingStep::TrainingStep(const Config& cfg, int64_t threads)
    : cfg_(cfg), precision_(resolve_precision(cfg.train.precision)) {
  set_gemm(cfg.train.gemm);  // process-wide; every worker of a layout has the same
  set_compute_threads(threads, products_in_onednn(precision_));
  cfg_.strategy.name = "single";
  cfg_.strategy.workers = 1;
  model_ = make_model(cfg_.model, kBenchVocab, 1);
  strategy_ = make_strategy(cfg_, model_->parameters(), group_.rank(0));
  params_ = model_->parameters();
  const int64_t B = cfg_.train.batch_size, T = model_->tokens_per_example();
  x_ = at::randint(kBenchVocab, {B, T}, at::kLong);
  y_ = at::randint(kBenchVocab, {B, T}, at::kLong);
  micro_ = micro_batches(cfg_.model, B, threads);
  threads_ = threads;
}

void TrainingStep::run(int64_t t) {
  forward_backward(*model_, params_, {x_, y_}, precision_, micro_);
  strategy_->step(t, cfg_.optim.lr);
}

void TrainingStep::route_products() {
  set_gemm_routes(measure_gemm_routes(*model_, params_, {x_, y_}, precision_, micro_, threads_));
}

double TrainingStep::tokens_per_step() const { return double(x_.numel()); }

}  // namespace atl::bench
