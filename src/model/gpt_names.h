// The built-in GPT's parameter names and nanoGPT's (karpathy/nanoGPT
// model.py), so that a model trained here can be saved as a nanoGPT
// state_dict (and one from nanoGPT read back).
//
//   atoll                nanoGPT
//   wte                  transformer.wte.weight
//   wpe                  transformer.wpe.weight
//   h<l>.ln_1.*          transformer.h.<l>.ln_1.*
//   h<l>.c_attn.*        transformer.h.<l>.attn.c_attn.*
//   h<l>.attn_proj.*     transformer.h.<l>.attn.c_proj.*
//   h<l>.ln_2.*          transformer.h.<l>.ln_2.*
//   h<l>.c_fc.*          transformer.h.<l>.mlp.c_fc.*
//   h<l>.mlp_proj.*      transformer.h.<l>.mlp.c_proj.*
//   ln_f.*               transformer.ln_f.*
//   (the same tensor)    lm_head.weight (tied to transformer.wte.weight)
// where * is weight or bias (biases only with model.bias). Both use
// nn.Linear's (out, in) layout, so no tensor is transposed. (GPT-2
// checkpoints from Hugging Face use Conv1D, (in, out); nanoGPT transposes
// those when it imports them. We target nanoGPT's own checkpoints.)
//
// nanoGPT without PyTorch 2's flash attention also keeps a causal-mask
// buffer, transformer.h.<l>.attn.bias, in its state_dict; it is not a
// parameter and is not produced here (nanoGPT drops it when importing too).
//
// Thread-safety: functions only.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/safetensors.h"

namespace atl {

// nanoGPT's name of its output head, which has no atoll parameter of its own.
inline constexpr const char* kNanogptLmHead = "lm_head.weight";

// The nanoGPT name of a built-in GPT parameter. Throws std::invalid_argument
// for a name that is not one (layer numbers are written without leading zeros).
std::string nanogpt_name(const std::string& atoll_name);

// The inverse. Throws std::invalid_argument for a name that is not a nanoGPT
// GPT parameter, and for lm_head.weight (tied to transformer.wte.weight:
// atoll has one tensor for both, so a reader skips it or checks it equals wte).
std::string atoll_gpt_name(const std::string& nanogpt_name);

// The tensors to export for a built-in GPT (its named_parameters()), renamed
// to nanoGPT's names, in nanoGPT's state_dict order, followed by
// lm_head.weight, a copy of wte (a file has no shared tensors: each name
// gets its own bytes, and the reference safetensors writer refuses tensors
// that share memory). The others are detached views of the parameters.
// Throws std::invalid_argument for a name that is not a GPT parameter, a
// repeated name, or a set that is not a whole GPT (every layer 0..L-1 with
// the same parameters, biases everywhere or nowhere), naming what is wrong.
std::vector<NamedTensor> nanogpt_tensors(const std::vector<std::pair<std::string, at::Tensor>>& atoll_named_params);

}  // namespace atl
