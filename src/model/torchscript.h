// TorchScript models (model.kind = torchscript): a module a PyTorch user
// saved with torch.jit.script(module).save(path), trained by atoll like a
// built-in model. The contract (docs/PYTORCH.md):
//   forward(inputs, targets) -> the batch's mean loss (0-dim tensor), or
//   forward(inputs) -> outputs scored by model.loss (cross_entropy: logits
//                      (B, ..., V) against int64 targets (B, ...); mse:
//                      outputs shaped like float targets).
// An optional @torch.jit.export method example_losses(inputs, targets) ->
// (B) per-example losses speeds up the evaluation of a module of the first
// kind, which is otherwise evaluated one example at a time.
//
// Thread-safety: one model per worker thread (each loads its own copy).
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "atoll/model.h"

namespace atl {

// A TorchScript file that cannot be loaded or does not keep the contract.
class TorchScriptError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads cfg.path. `tokens_per_example`: target elements per example (from
// the data), the unit of flops_per_token(). With cfg.reinit the weights are
// redrawn from `seed`; otherwise the saved weights are the start.
std::shared_ptr<Model> make_torchscript_model(const ModelConfig& cfg, int64_t tokens_per_example, uint64_t seed);

// Writes `module_path`'s module again with `weights` (exported names: module
// paths, tied parameters under each of their names) in place of its
// parameters, to `out_path` (temporary file, then rename). Every parameter
// must be given, with its shape.
void save_torchscript_with_weights(const std::string& module_path,
                                   const std::vector<std::pair<std::string, at::Tensor>>& weights,
                                   const std::string& out_path);

}  // namespace atl
