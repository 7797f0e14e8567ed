#include "train/task.h"

#include <c10/core/ScalarType.h>

#include "train/data_source.h"

namespace atl {

std::string model_task(const Config& cfg, bool float_targets, int64_t targets_per_example) {
  if (cfg.model.loss == "mse" || float_targets) return "regression";
  const std::string& d = cfg.data.dataset;
  // Text data are token sequences whatever model reads them.
  if (cfg.model.kind == "gpt" || d == "brown" || d == "text" || d == "bin") return "language";
  // Integer targets: one per example is a label, several a token sequence.
  return targets_per_example == 1 ? "classification" : "language";
}

std::string model_task(const Config& cfg, const DataSource& data) {
  bool float_targets = false;
  if (data.full_eval_examples() > 0)
    float_targets = at::isFloatingType(data.full_eval_batch(0, 1).second.scalar_type());
  return model_task(cfg, float_targets, data.tokens_per_example());
}

}  // namespace atl
