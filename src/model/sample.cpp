#include "model/sample.h"

#include <ATen/ATen.h>

#include <limits>
#include <stdexcept>

#include "model/init.h"

namespace atl {

std::vector<int32_t> sample_tokens(Model& model, const std::vector<int32_t>& prompt, const SampleOptions& o) {
  if (prompt.empty()) throw std::invalid_argument("the prompt must hold at least one token");
  if (o.tokens < 0 || o.temperature < 0 || o.top_k < 0 || o.block_size < 1 || o.vocab_size < 0)
    throw std::invalid_argument("sample: tokens, temperature, top-k and vocab_size must be >= 0, block_size >= 1");
  at::NoGradGuard no_grad;
  model.eval();
  at::Generator gen = make_init_generator(o.seed);
  std::vector<int32_t> ids = prompt;
  for (int64_t n = 0; n < o.tokens; ++n) {
    const int64_t context = std::min<int64_t>(int64_t(ids.size()), o.block_size);
    at::Tensor x = at::empty({1, context}, at::kLong);
    for (int64_t i = 0; i < context; ++i) x.data_ptr<int64_t>()[i] = ids[ids.size() - size_t(context) + size_t(i)];
    at::Tensor logits = model.next_token_logits(x).select(1, context - 1).squeeze(0).to(at::kFloat);  // (V)
    if (o.vocab_size > 0 && logits.size(0) > o.vocab_size) logits = logits.narrow(0, 0, o.vocab_size);
    int64_t next = 0;
    if (o.temperature == 0) {
      next = logits.argmax().item<int64_t>();
    } else {
      logits = logits / o.temperature;
      if (o.top_k > 0 && o.top_k < logits.size(0)) {
        const double kth = std::get<0>(logits.topk(o.top_k)).min().item<double>();
        logits.masked_fill_(logits < kth, -std::numeric_limits<float>::infinity());
      }
      next = at::multinomial(logits.softmax(0), 1, /*replacement=*/false, gen).item<int64_t>();
    }
    ids.push_back(static_cast<int32_t>(next));
  }
  return ids;
}

}  // namespace atl
