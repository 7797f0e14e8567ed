// Tests for the models: GPT shapes, initial loss, overfitting, parameter
// counts, seeding, GPT-2 initialisation, causality, FLOPs; MLP and CNN.
#include "atoll/model.h"
#include "model/gemm.h"
#include "train/threads.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace atl;

namespace {

ModelConfig gpt_config(int64_t n_layer, int64_t n_head, int64_t n_embd, int64_t block_size, bool bias = false) {
  ModelConfig c;
  c.kind = "gpt";
  c.n_layer = n_layer;
  c.n_head = n_head;
  c.n_embd = n_embd;
  c.block_size = block_size;
  c.dropout = 0.0;
  c.bias = bias;
  return c;
}

ModelConfig mnist_config(const std::string& kind) {
  ModelConfig c;
  c.kind = kind;
  c.mlp_hidden = 64;
  return c;
}

// Data drawn from a private generator, so tests do not depend on each other.
at::Tensor random_tokens(int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(vocab, {B, T}, gen, at::kLong);
}

// The closed form, written out independently of gpt_param_count().
int64_t closed_form_params(int64_t V, int64_t T, int64_t L, int64_t C, bool bias) {
  return V * C + T * C + L * (12 * C * C + (bias ? 13 * C : 2 * C)) + (bias ? 2 * C : C);
}

std::map<std::string, at::Tensor> named_params(const Model& m) {
  std::map<std::string, at::Tensor> out;
  for (const auto& item : m.named_parameters()) out[item.key()] = item.value();
  return out;
}

// Runs `steps` AdamW steps on one fixed batch and returns the final loss.
double overfit(Model& m, const at::Tensor& x, const at::Tensor& y, double lr, int steps) {
  torch::optim::AdamW opt(m.parameters(), torch::optim::AdamWOptions(lr).weight_decay(0.0));
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    at::Tensor l = m.loss(x, y);
    l.backward();
    opt.step();
  }
  at::NoGradGuard no_grad;
  return m.loss(x, y).item<double>();
}

// ---------------------------------------------------------------- GPT shapes

// The attention products with the batch split across BLAS threads give
// at::bmm's values, reading and writing strided views (heads in place):
// bitwise with one thread (it is at::bmm_out), to rounding with two (each
// matrix then runs on one BLAS thread).
TEST(BatchedMatmul, StridedProductsEqualBmmWithOneAndTwoBlasThreads) {
  at::Generator gen = at::detail::createCPUGenerator(3);
  // Two heads side by side in each of a, b and the output.
  const at::Tensor a = at::randn({16, 32, 2 * 8}, gen), b = at::randn({16, 2 * 32, 8}, gen);
  for (int threads : {1, 2}) {
    atl::set_compute_threads(threads);
    at::Tensor out = at::full({16, 32, 2 * 32}, 7.0);
    for (int64_t h = 0; h < 2; ++h)
      atl::bmm_into(out.narrow(2, h * 32, 32), a.narrow(2, h * 8, 8), b.narrow(1, h * 32, 32).transpose(1, 2));
    for (int64_t h = 0; h < 2; ++h) {
      const at::Tensor want =
          at::bmm(a.narrow(2, h * 8, 8).contiguous(), b.narrow(1, h * 32, 32).transpose(1, 2).contiguous());
      const at::Tensor got = out.narrow(2, h * 32, 32);
      if (threads == 1) {
        EXPECT_TRUE(at::equal(got, want)) << h;
      } else {
        EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5)) << h;
      }
    }
  }
  atl::set_compute_threads(atl::available_cores());
}

TEST(ModelGpt, LossIsZeroDimFloatForFullAndShorterSequences) {
  const ModelConfig c = gpt_config(2, 2, 32, 16);
  auto m = make_model(c, 50, 1);
  for (int64_t T : {int64_t(16), int64_t(5), int64_t(1)}) {
    at::Tensor x = random_tokens(4, T, 50, 10 + T), y = random_tokens(4, T, 50, 20 + T);
    at::Tensor l = m->loss(x, y);
    EXPECT_EQ(l.dim(), 0) << "T=" << T;
    EXPECT_EQ(l.scalar_type(), at::kFloat) << "T=" << T;
    EXPECT_TRUE(std::isfinite(l.item<double>())) << "T=" << T;
  }
}

TEST(ModelGpt, SequenceLongerThanBlockSizeThrows) {
  auto m = make_model(gpt_config(2, 2, 32, 16), 50, 1);
  at::Tensor x = random_tokens(4, 17, 50, 1), y = random_tokens(4, 17, 50, 2);
  try {
    m->loss(x, y);
    FAIL() << "T = 17 > block_size = 16 was accepted";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds block_size"), std::string::npos) << e.what();
  }
}

TEST(ModelGpt, TokensPerExampleIsBlockSize) {
  auto m = make_model(gpt_config(2, 2, 32, 16), 50, 1);
  EXPECT_EQ(m->tokens_per_example(), 16);
}

TEST(ModelGpt, InitialLossIsNearLogVocab) {
  const int64_t V = 65;
  auto m = make_model(gpt_config(2, 2, 32, 16), V, 3);
  at::NoGradGuard no_grad;
  double sum = 0;
  const int batches = 4;
  for (int i = 0; i < batches; ++i)
    sum += m->loss(random_tokens(8, 16, V, 100 + i), random_tokens(8, 16, V, 200 + i)).item<double>();
  EXPECT_NEAR(sum / batches, std::log(double(V)), 0.1);
}

// ---------------------------------------------------------------- overfitting

TEST(ModelGpt, OverfitsOneFixedBatchToNearZeroLoss) {
  const int64_t V = 20, B = 4, T = 16;
  auto m = make_model(gpt_config(2, 2, 32, T), V, 5);
  at::Tensor x = random_tokens(B, T, V, 7), y = random_tokens(B, T, V, 8);
  // Distinct first tokens: otherwise position 0 of two sequences could see the
  // same context with different targets, and no model could fit both.
  for (int64_t b = 0; b < B; ++b) x[b][0] = b;
  const double before = m->loss(x, y).item<double>();
  const double after = overfit(*m, x, y, 1e-2, 200);
  EXPECT_GT(before, 2.0);
  EXPECT_LT(after, 0.05) << "loss before " << before;
}

// Trains an MNIST model on one fixed batch of 16 random images with random labels.
void expect_image_model_overfits(const std::string& kind, uint64_t data_seed, double lr) {
  auto m = make_model(mnist_config(kind), 0, 5);
  at::Generator gen = at::detail::createCPUGenerator(data_seed);
  at::Tensor x = at::rand({16, 1, 28, 28}, gen), y = at::randint(10, {16}, gen, at::kLong);
  const double before = m->loss(x, y).item<double>();
  const double after = overfit(*m, x, y, lr, 100);
  EXPECT_GT(before, 1.5) << kind;
  EXPECT_LT(after, 0.05) << kind << ": loss before " << before;
}

TEST(ModelMnist, MlpOverfitsOneFixedBatchToNearZeroLoss) { expect_image_model_overfits("mlp", 11, 1e-3); }

TEST(ModelMnist, CnnOverfitsOneFixedBatchToNearZeroLoss) { expect_image_model_overfits("cnn", 12, 3e-3); }

// ---------------------------------------------------------------- parameters

TEST(ModelGpt, ParamCountMatchesGptParamCountAndClosedForm) {
  struct Shape {
    int64_t L, H, C, T, V;
  };
  for (const Shape& s :
       {Shape{1, 1, 8, 4, 10}, Shape{2, 2, 32, 16, 50}, Shape{3, 4, 48, 24, 65}, Shape{4, 2, 16, 33, 257}}) {
    for (bool bias : {false, true}) {
      const ModelConfig c = gpt_config(s.L, s.H, s.C, s.T, bias);
      auto m = make_model(c, s.V, 1);
      const int64_t expected = closed_form_params(s.V, s.T, s.L, s.C, bias);
      EXPECT_EQ(m->num_params(), expected) << "L=" << s.L << " C=" << s.C << " bias=" << bias;
      EXPECT_EQ(gpt_param_count(c, s.V), expected) << "L=" << s.L << " C=" << s.C << " bias=" << bias;
    }
  }
}

TEST(ModelSeed, SameSeedGivesBitwiseIdenticalParametersWhateverTheGlobalRng) {
  for (const std::string kind : {"gpt", "mlp", "cnn"}) {
    const ModelConfig c = kind == "gpt" ? gpt_config(2, 2, 32, 16, true) : mnist_config(kind);
    at::manual_seed(1);
    auto a = make_model(c, 50, 42);
    at::manual_seed(2);  // the global RNG must not leak into initialisation
    auto b = make_model(c, 50, 42);
    auto pa = named_params(*a), pb = named_params(*b);
    ASSERT_EQ(pa.size(), pb.size()) << kind;
    for (const auto& [name, t] : pa) {
      ASSERT_TRUE(pb.count(name)) << kind << " " << name;
      EXPECT_TRUE(at::equal(t, pb[name])) << kind << " " << name;
    }
  }
}

TEST(ModelSeed, DifferentSeedGivesDifferentParameters) {
  for (const std::string kind : {"gpt", "mlp", "cnn"}) {
    const ModelConfig c = kind == "gpt" ? gpt_config(2, 2, 32, 16) : mnist_config(kind);
    auto a = make_model(c, 50, 42);
    auto b = make_model(c, 50, 43);
    auto pa = named_params(*a), pb = named_params(*b);
    int differing = 0;
    for (const auto& [name, t] : pa) {
      // Constant-initialised tensors (LayerNorm weights) are equal by design.
      if (t.dim() < 2) continue;
      EXPECT_FALSE(at::equal(t, pb[name])) << kind << " " << name;
      ++differing;
    }
    EXPECT_GT(differing, 0) << kind;
  }
}

TEST(ModelGpt, Gpt2InitScalesResidualProjections) {
  const int64_t L = 2, C = 256;
  auto m = make_model(gpt_config(L, 4, C, 64, /*bias=*/true), 65, 9);
  const double residual_std = 0.02 / std::sqrt(2.0 * L);
  auto params = named_params(*m);
  int residual = 0, other = 0;
  for (const auto& [name, t] : params) {
    const bool is_ln = name.find("ln_") != std::string::npos;
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (is_bias) {
      EXPECT_EQ(t.abs().max().item<double>(), 0.0) << name << " should start at zero";
      continue;
    }
    if (is_ln) {
      EXPECT_TRUE(at::equal(t, at::ones_like(t))) << name << " should start at one";
      continue;
    }
    const double std = t.std().item<double>(), mean = t.mean().item<double>();
    const bool is_residual =
        name.find("attn_proj.weight") != std::string::npos || name.find("mlp_proj.weight") != std::string::npos;
    const double want = is_residual ? residual_std : 0.02;
    EXPECT_NEAR(std, want, 0.1 * want) << name;
    EXPECT_NEAR(mean, 0.0, 0.1 * want) << name;
    (is_residual ? residual : other)++;
  }
  EXPECT_EQ(residual, 2 * L);   // attn_proj and mlp_proj per block
  EXPECT_EQ(other, 2 + 2 * L);  // wte, wpe, c_attn and c_fc per block
}

// ---------------------------------------------------------------- causality

// With ignore_index (-100) targets, the loss is the cross-entropy at chosen
// positions only. Changing the token at position j must leave the loss at
// every earlier position unchanged, and must change it at position j.
TEST(ModelGpt, CausalChangingTokenJLeavesEarlierPositionsUnchanged) {
  const int64_t V = 30, T = 12, j = 7;
  auto m = make_model(gpt_config(2, 2, 32, T), V, 4);
  at::NoGradGuard no_grad;
  at::Tensor x = random_tokens(1, T, V, 31), y = random_tokens(1, T, V, 32);
  at::Tensor x2 = x.clone();
  x2[0][j] = (x[0][j].item<int64_t>() + 1) % V;
  // Later tokens differ too: they must not matter either.
  for (int64_t t = j + 1; t < T; ++t) x2[0][t] = (x[0][t].item<int64_t>() + 3) % V;
  auto only = [&](int64_t p) {
    at::Tensor yp = at::full({1, T}, -100, at::kLong);
    yp[0][p] = y[0][p];
    return yp;
  };
  for (int64_t p = 0; p < j; ++p) {
    at::Tensor a = m->loss(x, only(p)), b = m->loss(x2, only(p));
    EXPECT_TRUE(at::equal(a, b)) << "position " << p << ": " << a.item<double>() << " vs " << b.item<double>();
  }
  // The test can fail: position j does see its own token.
  EXPECT_NE(m->loss(x, only(j)).item<double>(), m->loss(x2, only(j)).item<double>());
}

// ---------------------------------------------------------------- FLOPs

TEST(ModelGpt, FlopsPerTokenIsSixParamsPlusAttentionTerm) {
  for (bool bias : {false, true}) {
    const int64_t L = 3, C = 48, T = 24, V = 65;
    const ModelConfig c = gpt_config(L, 4, C, T, bias);
    auto m = make_model(c, V, 1);
    const double params = double(closed_form_params(V, T, L, C, bias));
    EXPECT_DOUBLE_EQ(m->flops_per_token(), 6.0 * params + 12.0 * L * T * C) << "bias=" << bias;
  }
}

// ---------------------------------------------------------------- MNIST models

TEST(ModelMnist, MlpAndCnnLossOnImagesIsScalarNearLog10AndOneTokenPerExample) {
  for (const std::string kind : {"mlp", "cnn"}) {
    auto m = make_model(mnist_config(kind), 0, 1);
    at::Generator gen = at::detail::createCPUGenerator(3);
    at::Tensor x = at::rand({5, 1, 28, 28}, gen), y = at::randint(10, {5}, gen, at::kLong);
    at::Tensor l = m->loss(x, y);
    EXPECT_EQ(l.dim(), 0) << kind;
    EXPECT_EQ(l.scalar_type(), at::kFloat) << kind;
    // Ten classes, small initial logits: near ln(10).
    EXPECT_NEAR(l.item<double>(), std::log(10.0), 0.5) << kind;
    EXPECT_EQ(m->tokens_per_example(), 1) << kind;
  }
}

TEST(ModelFactory, UnknownKindAndMissingVocabularyThrow) {
  ModelConfig c = gpt_config(1, 1, 8, 4);
  EXPECT_THROW(make_model(c, 0, 1), std::invalid_argument);
  c.kind = "rnn";
  EXPECT_THROW(make_model(c, 10, 1), std::invalid_argument);
}

}  // namespace
