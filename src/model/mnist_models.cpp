// Small MNIST models: a two-hidden-layer MLP and a LeNet-like CNN.
#include <ATen/ATen.h>
#include <ATen/core/Reduction.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <cmath>

#include "atoll/model.h"
#include "model/init.h"

namespace atl {
namespace {

// PyTorch's default Linear/Conv init (uniform +-1/sqrt(fan_in)), drawn from
// a private generator.
void init_uniform(at::Tensor& w, at::Tensor& b, int64_t fan_in, at::Generator& gen) {
  at::NoGradGuard no_grad;
  const double bound = 1.0 / std::sqrt(double(fan_in));
  w.uniform_(-bound, bound, gen);
  if (b.defined()) b.uniform_(-bound, bound, gen);
}

// A classifier's evaluation figures from its logits (B, 10) and labels (B).
Model::ExampleScores scores(const at::Tensor& logits, const at::Tensor& y) {
  return {at::cross_entropy_loss(logits, y, /*weight=*/{}, at::Reduction::None), logits.argmax(1).eq(y)};
}

class Mlp : public Model {
 public:
  Mlp(const ModelConfig& c, uint64_t seed) {
    const int64_t h = c.mlp_hidden;
    fc1 = register_module("fc1", torch::nn::Linear(784, h));
    fc2 = register_module("fc2", torch::nn::Linear(h, h));
    fc3 = register_module("fc3", torch::nn::Linear(h, 10));
    at::Generator gen = make_init_generator(seed);
    for (auto* l : {&fc1, &fc2, &fc3}) init_uniform((*l)->weight, (*l)->bias, (*l)->weight.size(1), gen);
  }
  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) override { return at::cross_entropy_loss(logits(x), y); }
  at::Tensor example_losses(const at::Tensor& x, const at::Tensor& y) override {
    return at::cross_entropy_loss(logits(x), y, /*weight=*/{}, at::Reduction::None);  // (B)
  }
  ExampleScores example_scores(const at::Tensor& x, const at::Tensor& y) override { return scores(logits(x), y); }
  // x: (B, 1, 28, 28) -> (B, 10) logits.
  at::Tensor logits(const at::Tensor& x) {
    at::Tensor h = x.reshape({x.size(0), 784});  // (B, 784)
    h = at::relu(fc1->forward(h));
    h = at::relu(fc2->forward(h));
    return fc3->forward(h);
  }
  double flops_per_token() const override { return 6.0 * double(num_params()); }
  int64_t tokens_per_example() const override { return 1; }

  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

class Cnn : public Model {
 public:
  Cnn(const ModelConfig&, uint64_t seed) {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 5)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 5)));
    fc = register_module("fc", torch::nn::Linear(32 * 4 * 4, 10));
    at::Generator gen = make_init_generator(seed);
    init_uniform(conv1->weight, conv1->bias, 1 * 25, gen);
    init_uniform(conv2->weight, conv2->bias, 16 * 25, gen);
    init_uniform(fc->weight, fc->bias, 32 * 16, gen);
  }
  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) override { return at::cross_entropy_loss(logits(x), y); }
  at::Tensor example_losses(const at::Tensor& x, const at::Tensor& y) override {
    return at::cross_entropy_loss(logits(x), y, /*weight=*/{}, at::Reduction::None);  // (B)
  }
  ExampleScores example_scores(const at::Tensor& x, const at::Tensor& y) override { return scores(logits(x), y); }
  // x: (B, 1, 28, 28) -> (B, 10) logits.
  at::Tensor logits(const at::Tensor& x) {
    at::Tensor h = at::max_pool2d(at::relu(conv1->forward(x)), {2, 2});  // (B, 16, 12, 12)
    h = at::max_pool2d(at::relu(conv2->forward(h)), {2, 2});             // (B, 32, 4, 4)
    return fc->forward(h.flatten(1));
  }
  // Convolutions reuse weights across positions: count MACs, not parameters.
  double flops_per_token() const override {
    const double conv1_macs = 16.0 * 24 * 24 * 25, conv2_macs = 32.0 * 8 * 8 * 16 * 25;
    return 6.0 * (conv1_macs + conv2_macs + 512.0 * 10);
  }
  int64_t tokens_per_example() const override { return 1; }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_mlp(const ModelConfig& cfg, uint64_t seed) { return std::make_shared<Mlp>(cfg, seed); }
std::shared_ptr<Model> make_cnn(const ModelConfig& cfg, uint64_t seed) { return std::make_shared<Cnn>(cfg, seed); }

}  // namespace atl
