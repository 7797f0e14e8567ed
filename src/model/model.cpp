#include <ATen/ATen.h>

#include <stdexcept>

#include "atoll/model.h"
#include "model/init.h"

namespace atl {

int64_t Model::num_params() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

std::shared_ptr<Model> make_model(const ModelConfig& cfg, int64_t vocab_size, uint64_t seed) {
  if (cfg.kind == "gpt") {
    if (vocab_size < 1) throw std::invalid_argument("GPT needs a vocabulary size >= 1");
    return make_gpt(cfg, vocab_size, seed);
  }
  if (cfg.kind == "mlp") return make_mlp(cfg, seed);
  if (cfg.kind == "cnn") return make_cnn(cfg, seed);
  throw std::invalid_argument("model.kind = '" + cfg.kind + "': allowed values are gpt | mlp | cnn");
}

}  // namespace atl
