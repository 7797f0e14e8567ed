// Text from a trained language model (`atoll sample`): autoregressive
// sampling with temperature and top-k, as nanoGPT's sample.py does it.
#pragma once

#include <cstdint>
#include <vector>

#include "atoll/model.h"

namespace atl {

struct SampleOptions {
  int64_t tokens = 200;      // new tokens to generate
  double temperature = 0.8;  // logits are divided by it; 0 = always the most likely token
  int64_t top_k = 40;        // sample among the k most likely tokens (0 = all)
  uint64_t seed = 1;         // the draws' generator: same seed, same text
  int64_t block_size = 128;  // the model's context: only the last block_size tokens are fed
  int64_t vocab_size = 0;    // > 0: only ids below it are drawn (a head wider than the tokenizer's
                             // vocabulary, as nanoGPT pads GPT-2's); 0 = every logit's id
};

// `prompt` (>= 1 token ids) followed by o.tokens generated ids. Runs in
// eval mode without autograd.
std::vector<int32_t> sample_tokens(Model& model, const std::vector<int32_t>& prompt, const SampleOptions& o);

}  // namespace atl
