// make_model(): the one table of model kinds.
#include <stdexcept>

#include "atoll/model.h"
#include "model/init.h"
#include "model/torchscript.h"

namespace atl {

std::shared_ptr<Model> make_model(const ModelConfig& cfg, int64_t vocab_size, uint64_t seed,
                                  int64_t tokens_per_example) {
  if (cfg.kind == "gpt") {
    if (vocab_size < 1) throw std::invalid_argument("GPT needs a vocabulary size >= 1");
    return make_gpt(cfg, vocab_size, seed);
  }
  if (cfg.kind == "mlp") return make_mlp(cfg, seed);
  if (cfg.kind == "cnn") return make_cnn(cfg, seed);
  if (cfg.kind == "torchscript") return make_torchscript_model(cfg, tokens_per_example, seed);
  throw std::invalid_argument("model.kind = '" + cfg.kind + "': allowed values are gpt | mlp | cnn | torchscript");
}

}  // namespace atl
