// The weights a run hands back to PyTorch, and reading them in again.
//
// Names follow the module path, as PyTorch's state_dict() names them:
//   built-in GPT   nanoGPT's names ("transformer.h.0.attn.c_attn.weight"),
//                  with lm_head.weight a copy of transformer.wte.weight, so
//                  nanoGPT-style code loads the file with load_state_dict;
//   torchscript    the module's own names, a tied parameter under each;
//   mlp, cnn       atoll's module paths ("fc1.weight").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "atoll/model.h"
#include "model/safetensors.h"

namespace atl {

// Copies of `model`'s parameters under their exported names.
std::vector<NamedTensor> exported_tensors(Model& model, const ModelConfig& cfg);

// Copies exported tensors into `model` (a model built from the same config).
// Throws std::runtime_error naming `source` and the tensor if one is
// missing, shaped differently, or unknown.
void load_exported_tensors(Model& model, const ModelConfig& cfg, const std::vector<NamedTensor>& tensors,
                           const std::string& source);

// The run folder's copy of the weights it evaluated last: <run>/model.safetensors.
inline constexpr const char* kRunModelFile = "model.safetensors";
// A TorchScript run's copy of its module file, as it was at the start: <run>/model.pt.
inline constexpr const char* kRunModuleFile = "model.pt";

}  // namespace atl
