// nanoGPT-style decoder-only transformer.
#include <ATen/ATen.h>
#include <ATen/core/Reduction.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>

#include <cmath>

#include "atoll/model.h"
#include "model/causal_attention.h"
#include "model/gemm.h"
#include "model/init.h"

namespace atl {
namespace {

// LayerNorm whose bias is optional (LibTorch 1.13's LayerNorm always has one).
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t dim, bool has_bias) : dim_(dim) {
    weight = register_parameter("weight", at::ones({dim}));
    if (has_bias) bias = register_parameter("bias", at::zeros({dim}));
  }
  at::Tensor forward(const at::Tensor& x) { return at::layer_norm(x, {dim_}, weight, bias, 1e-5); }
  at::Tensor weight, bias;

 private:
  int64_t dim_;
};
TORCH_MODULE(LayerNorm);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& c)
      : n_head_(c.n_head),
        dropout_(c.dropout),
        ln1(register_module("ln_1", LayerNorm(c.n_embd, c.bias))),
        c_attn(register_module("c_attn",
                               torch::nn::Linear(torch::nn::LinearOptions(c.n_embd, 3 * c.n_embd).bias(c.bias)))),
        attn_proj(
            register_module("attn_proj", torch::nn::Linear(torch::nn::LinearOptions(c.n_embd, c.n_embd).bias(c.bias)))),
        ln2(register_module("ln_2", LayerNorm(c.n_embd, c.bias))),
        c_fc(register_module("c_fc", torch::nn::Linear(torch::nn::LinearOptions(c.n_embd, 4 * c.n_embd).bias(c.bias)))),
        mlp_proj(register_module("mlp_proj",
                                 torch::nn::Linear(torch::nn::LinearOptions(4 * c.n_embd, c.n_embd).bias(c.bias)))) {}

  // x: (B, T, C).
  at::Tensor forward(const at::Tensor& x) {
    // The linears' products go to the GEMM train.gemm chose (model/gemm.h).
    auto apply = [](torch::nn::Linear& l, const at::Tensor& in) { return linear(in, l->weight, l->bias); };
    at::Tensor y = causal_attention(apply(c_attn, ln1->forward(x)), n_head_, dropout_, is_training());
    y = apply(attn_proj, y);
    if (dropout_ > 0) y = at::dropout(y, dropout_, is_training());
    at::Tensor h = x + y;
    at::Tensor m = apply(mlp_proj, at::gelu(apply(c_fc, ln2->forward(h))));
    if (dropout_ > 0) m = at::dropout(m, dropout_, is_training());
    return h + m;
  }

  int64_t n_head_;
  double dropout_;
  LayerNorm ln1;
  torch::nn::Linear c_attn, attn_proj;
  LayerNorm ln2;
  torch::nn::Linear c_fc, mlp_proj;
};
TORCH_MODULE(Block);

class GPT : public Model {
 public:
  GPT(const ModelConfig& c, int64_t vocab, uint64_t seed) : cfg_(c), vocab_(vocab) {
    wte = register_parameter("wte", at::empty({vocab, c.n_embd}));
    wpe = register_parameter("wpe", at::empty({c.block_size, c.n_embd}));
    for (int64_t l = 0; l < c.n_layer; ++l) blocks.push_back(register_module("h" + std::to_string(l), Block(c)));
    ln_f = register_module("ln_f", LayerNorm(c.n_embd, c.bias));

    // GPT-2 initialisation, from a private generator so that concurrent
    // workers never share RNG state.
    at::Generator gen = make_init_generator(seed);
    const double residual_std = 0.02 / std::sqrt(2.0 * c.n_layer);
    at::NoGradGuard no_grad;
    wte.normal_(0, 0.02, gen);
    wpe.normal_(0, 0.02, gen);
    for (auto& b : blocks) {
      for (auto* lin : {&b->c_attn, &b->attn_proj, &b->c_fc, &b->mlp_proj}) {
        bool residual = lin == &b->attn_proj || lin == &b->mlp_proj;
        (*lin)->weight.normal_(0, residual ? residual_std : 0.02, gen);
        if ((*lin)->bias.defined()) (*lin)->bias.zero_();
      }
    }
  }

  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) override {
    return at::cross_entropy_loss(logits(x).view({-1, vocab_}), y.reshape({-1}));
  }

  at::Tensor example_losses(const at::Tensor& x, const at::Tensor& y) override {
    const int64_t B = x.size(0), T = x.size(1);
    at::Tensor per_token = at::cross_entropy_loss(logits(x).view({-1, vocab_}), y.reshape({-1}),
                                                  /*weight=*/{}, at::Reduction::None);  // (B * T)
    return per_token.view({B, T}).mean(1);                                              // (B)
  }

  double flops_per_token() const override {
    return 6.0 * double(num_params()) + 12.0 * double(cfg_.n_layer) * double(cfg_.block_size) * double(cfg_.n_embd);
  }
  int64_t tokens_per_example() const override { return cfg_.block_size; }
  at::Tensor next_token_logits(const at::Tensor& x) override { return logits(x); }

  at::Tensor wte, wpe;
  std::vector<Block> blocks;
  LayerNorm ln_f{nullptr};

 private:
  // x: (B, T) int64 tokens -> (B, T, V) logits.
  at::Tensor logits(const at::Tensor& x) {
    const int64_t T = x.size(1);
    TORCH_CHECK(T <= cfg_.block_size, "sequence length ", T, " exceeds block_size ", cfg_.block_size);
    at::Tensor pos = at::arange(T, at::kLong);
    at::Tensor h = at::embedding(wte, x) + at::embedding(wpe, pos);  // (B, T, C)
    if (cfg_.dropout > 0) h = at::dropout(h, cfg_.dropout, is_training());
    for (auto& b : blocks) h = b->forward(h);
    h = ln_f->forward(h);
    return linear(h, wte, at::Tensor());  // head tied to the token embedding: (B, T, V)
  }

  ModelConfig cfg_;
  int64_t vocab_;
};

}  // namespace

int64_t gpt_param_count(const ModelConfig& c, int64_t vocab) {
  const int64_t C = c.n_embd;
  const int64_t per_block = 12 * C * C + (c.bias ? 13 * C : 2 * C);
  return vocab * C + c.block_size * C + c.n_layer * per_block + (c.bias ? 2 * C : C);
}

std::shared_ptr<Model> make_gpt(const ModelConfig& cfg, int64_t vocab_size, uint64_t seed) {
  return std::make_shared<GPT>(cfg, vocab_size, seed);
}

}  // namespace atl
