// Models: a nanoGPT-style GPT, an MLP and a small CNN for MNIST, and a
// user's TorchScript module (src/model/torchscript.h).
//
// A Model returns the mean cross-entropy loss for a batch; it knows nothing
// about workers or communication.
// Thread-safety: one Model per worker thread.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "atoll/config.h"

namespace atl {

class Model : public torch::nn::Module {
 public:
  // x: (B, T) int64 tokens or (B, 1, 28, 28) images; y: (B, T) or (B) int64.
  // Returns the mean cross-entropy as a 0-dim tensor.
  virtual at::Tensor loss(const at::Tensor& x, const at::Tensor& y) = 0;
  // The same cross-entropy per example, for evaluation and its standard
  // error: (B) float, the mean over a sequence's T tokens for GPT, the
  // image's loss for MNIST models. Its mean over a batch equals loss()
  // (up to float rounding) because every example has the same length.
  virtual at::Tensor example_losses(const at::Tensor& x, const at::Tensor& y) = 0;
  // What an evaluation needs of a batch: every example's loss (as
  // example_losses) and, for a classifier (one class label per example,
  // scored by its logits), whether its highest logit is its label (bool
  // (B); undefined for other models: language models, regressors, modules
  // that compute their own loss). One forward pass gives both.
  struct ExampleScores {
    at::Tensor losses;   // (B) float
    at::Tensor correct;  // (B) bool, or undefined
  };
  virtual ExampleScores example_scores(const at::Tensor& x, const at::Tensor& y);
  // Training FLOPs (forward + backward) per token (per image for MNIST
  // models): 6 * params plus, for GPT, the attention term 12 * L * T * C.
  // A TorchScript module: model.flops_per_sample per token, 0 when not
  // given (model_training_flops() in src/model/flop_count.h counts them).
  virtual double flops_per_token() const = 0;
  // Tokens (or images) in one example: block_size for GPT, 1 for MNIST.
  virtual int64_t tokens_per_example() const = 0;
  int64_t num_params() const;
  // Language models (the built-in GPT, a TorchScript module whose
  // forward(inputs) gives logits): logits (B, T, V) of the token after each
  // position of x (B, T), for `atoll sample`. Others throw, saying why.
  virtual at::Tensor next_token_logits(const at::Tensor& x);
  // Parameters the model holds under more than one name (a TorchScript
  // module's head tied to its embedding): (alias, name in
  // named_parameters()). parameters() lists each tensor once.
  virtual std::vector<std::pair<std::string, std::string>> parameter_aliases() const { return {}; }
};

// GPT: token + position embeddings, n_layer pre-LayerNorm blocks (causal
// multi-head self-attention, GELU MLP of width 4C), final LayerNorm, head
// tied to the token embedding. GPT-2 init: N(0, 0.02), residual projections
// N(0, 0.02 / sqrt(2 n_layer)), biases zero.
// Parameter count: V*C + T*C + L*(12*C*C + (bias ? 13*C : 2*C)) + (bias ? 2*C : C).
int64_t gpt_param_count(const ModelConfig& cfg, int64_t vocab_size);

// Builds the model named by cfg.kind; the RNG seed decides initialisation
// (a TorchScript model starts from its saved weights unless cfg.reinit).
// `tokens_per_example`: target elements per example of the data
// (DataSource::tokens_per_example()); only a TorchScript model, which
// cannot know it, uses it.
std::shared_ptr<Model> make_model(const ModelConfig& cfg, int64_t vocab_size, uint64_t seed,
                                  int64_t tokens_per_example = 1);

}  // namespace atl
