// What a run's model learns, as its reports count and judge it:
//   "language"        a loss per token over token sequences: counted in
//                     tokens, with a perplexity (exp of the mean loss);
//   "classification"  one class label per example, scored by cross-entropy:
//                     counted in examples, with an accuracy;
//   "regression"      float targets (model.loss = mse, or a module's own loss
//                     on float targets): counted in examples, the loss alone.
// Recorded in the start event and summary.json; the report reads it there.
#pragma once

#include <cstdint>
#include <string>

#include "atoll/config.h"

namespace atl {

class DataSource;

// From the config and what the data hold: `float_targets` (npy regression
// targets), `targets_per_example` (1 for a label, T for a token sequence).
std::string model_task(const Config& cfg, bool float_targets, int64_t targets_per_example);
// The same, reading the data's targets.
std::string model_task(const Config& cfg, const DataSource& data);

}  // namespace atl
