// One training step's forward and backward pass: the batch's mean loss,
// and its gradient accumulated into every parameter's .grad.
//
// A worker with several threads (a lone worker on every core) cuts its
// batch into one contiguous micro-batch per thread and computes them side
// by side, each on its own thread with one BLAS thread, as N single-threaded
// simulated workers do: measured, that layout runs the small GEMMs and the
// element-wise work around them far closer to the machine's GEMM rate than
// one batch on a multi-threaded BLAS whose element-wise work stays serial.
// The micro-batches' gradients are added in a fixed order, so the result
// does not depend on thread timing.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "atoll/config.h"
#include "atoll/model.h"

namespace atl {

// Micro-batches for a batch of `rows` examples on `threads` threads (1 =
// the whole batch at once). Only built-in models without dropout are cut:
// dropout draws from one shared generator, whose order across threads would
// vary, and a TorchScript module may hold such state of its own.
int64_t micro_batches(const ModelConfig& model, int64_t rows, int64_t threads);

// Loss of `batch` (mean over its examples, a 0-dim tensor) after adding its
// gradient to `params`' .grad, forward under train.precision `precision`,
// in `micro` micro-batches (micro_batches above).
at::Tensor forward_backward(Model& model, const std::vector<at::Tensor>& params,
                            const std::pair<at::Tensor, at::Tensor>& batch, const std::string& precision,
                            int64_t micro);

}  // namespace atl
