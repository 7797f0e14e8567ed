// train.gemm = auto, at the start of a run: run one training step of the
// model dry (no trace left: model/dry_pass.h, gradients cleared) to capture
// the shape of every fp32 product it issues, time each shape in OpenBLAS and
// in oneDNN on the threads it runs on, and route it to the faster
// (model/gemm_routes.h). A resumed run reads its routes from the checkpoint
// instead (driver.cpp), so that it multiplies as the run it continues.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "atoll/model.h"
#include "model/gemm_routes.h"

namespace atl {

// `batch` is one training batch of the run's size (its values do not
// matter); `precision`, `micro` and `threads` as the worker's step runs.
// Call with train.gemm = auto set and no model running; leaves the calling
// thread's compute threads as the step's.
std::vector<GemmRoute> measure_gemm_routes(Model& model, const std::vector<at::Tensor>& params,
                                           const std::pair<at::Tensor, at::Tensor>& batch, const std::string& precision,
                                           int64_t micro, int64_t threads);

}  // namespace atl
