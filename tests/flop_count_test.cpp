// FLOPs counted from what a model runs (src/model/flop_count.h): each
// product operator against its closed form, TorchScript modules (an MLP, a
// conv net, a GPT-like transformer) against theirs, and a counting pass
// that leaves nothing a run would see changed.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <cmath>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "atoll/model.h"
#include "model/flop_count.h"
#include "test_util.h"
#include "torchscript_modules.h"

namespace atl {
namespace {

// A TorchScript model from `module` saved in `tmp`.
std::shared_ptr<Model> scripted(const testing::TempDir& tmp, torch::jit::Module module, const std::string& name,
                                const std::string& loss = "auto") {
  const std::string path = tmp.path(name + ".pt");
  module.save(path);
  ModelConfig cfg;
  cfg.kind = "torchscript";
  cfg.path = path;
  cfg.loss = loss;
  return make_model(cfg, 0, 1);
}

TEST(FlopCount, EachProductCountsTwoFlopsPerMultiplyAddOnceAtItsOutermostOperator) {
  at::manual_seed(1);
  auto r = [](std::vector<int64_t> shape) { return at::randn(shape); };
  using Ints = std::vector<int64_t>;  // not a braced list, which could also make conv2d's padding string
  struct Case {
    std::string what;
    std::function<void()> run;
    double flops;
    std::string op;  // the one operator the FLOPs are booked under
  };
  const std::vector<Case> cases = {
      {"mm (3,5)(5,7)",
       [&] {
         at::mm(r({3, 5}), r({5, 7}));
       },
       2 * 3 * 5 * 7, "aten::mm"},
      {"addmm",
       [&] {
         at::addmm(r({7}), r({3, 5}), r({5, 7}));
       },
       2 * 3 * 5 * 7, "aten::addmm"},
      {"bmm (4,3,5)(4,5,7)",
       [&] {
         at::bmm(r({4, 3, 5}), r({4, 5, 7}));
       },
       2 * 4 * 3 * 5 * 7, "aten::bmm"},
      {"baddbmm",
       [&] {
         at::baddbmm(r({4, 3, 7}), r({4, 3, 5}), r({4, 5, 7}));
       },
       2 * 4 * 3 * 5 * 7, "aten::baddbmm"},
      {"addbmm sums the 4 products",
       [&] {
         at::addbmm(r({3, 7}), r({4, 3, 5}), r({4, 5, 7}));
       },
       2 * 4 * 3 * 5 * 7, "aten::addbmm"},
      {"matmul (2,4,3,5)(5,7), folded into mm",
       [&] {
         at::matmul(r({2, 4, 3, 5}), r({5, 7}));
       },
       2 * 2 * 4 * 3 * 5 * 7, "aten::matmul"},
      {"matmul broadcast (2,1,3,5)(4,5,7)",
       [&] {
         at::matmul(r({2, 1, 3, 5}), r({4, 5, 7}));
       },
       2 * 2 * 4 * 3 * 5 * 7, "aten::matmul"},
      {"matmul (5)(4,5,7)",
       [&] {
         at::matmul(r({5}), r({4, 5, 7}));
       },
       2 * 4 * 5 * 7, "aten::matmul"},
      {"matmul (5)(5)", [&] { at::matmul(r({5}), r({5})); }, 2 * 5, "aten::matmul"},
      {"linear (2,3,5) -> 7 with bias",
       [&] {
         at::linear(r({2, 3, 5}), r({7, 5}), r({7}));
       },
       2 * 2 * 3 * 5 * 7, "aten::linear"},
      {"linear without bias",
       [&] {
         at::linear(r({2, 3, 5}), r({7, 5}));
       },
       2 * 2 * 3 * 5 * 7, "aten::linear"},
      {"mv",
       [&] {
         at::mv(r({3, 5}), r({5}));
       },
       2 * 3 * 5, "aten::mv"},
      {"dot", [&] { at::dot(r({5}), r({5})); }, 2 * 5, "aten::dot"},
      {"einsum, through its bmm",
       [&] {
         at::einsum("bij,bjk->bik", {r({4, 3, 5}), r({4, 5, 7})});
       },
       2 * 4 * 3 * 5 * 7, "aten::bmm"},
      // (2,3,9,9) * (4,3,3,3), stride 2, padding 1 -> (2,4,5,5): 27 multiply-adds per output.
      {"conv2d",
       [&] {
         at::conv2d(r({2, 3, 9, 9}), r({4, 3, 3, 3}), r({4}), Ints{2, 2}, Ints{1, 1});
       },
       2.0 * (2 * 4 * 5 * 5) * (3 * 3 * 3), "aten::conv2d"},
      // 3 groups of 2 input channels: (2,6,8,8) -> (2,6,6,6), 2 x 9 multiply-adds per output.
      {"conv2d, 3 groups",
       [&] {
         at::conv2d(r({2, 6, 8, 8}), r({6, 2, 3, 3}), {}, Ints{1, 1}, Ints{0, 0}, Ints{1, 1}, 3);
       },
       2.0 * (2 * 6 * 6 * 6) * (2 * 3 * 3), "aten::conv2d"},
      {"conv1d (2,3,10) * (4,3,3) -> (2,4,8)",
       [&] {
         at::conv1d(r({2, 3, 10}), r({4, 3, 3}));
       },
       2.0 * (2 * 4 * 8) * (3 * 3), "aten::conv1d"},
      // Every input element meets 3 output channels x 9 kernel weights.
      {"conv_transpose2d",
       [&] {
         at::conv_transpose2d(r({2, 4, 5, 5}), r({4, 3, 3, 3}), {}, Ints{2, 2});
       },
       2.0 * (2 * 4 * 5 * 5) * (3 * 3 * 3), "aten::conv_transpose2d"},
      {"convolution, transposed",
       [&] {
         at::convolution(r({2, 4, 5, 5}), r({4, 3, 3, 3}), {}, Ints{2, 2}, Ints{0, 0}, Ints{1, 1}, true, Ints{0, 0}, 1);
       },
       2.0 * (2 * 4 * 5 * 5) * (3 * 3 * 3), "aten::convolution"},
      {"elementwise work, softmax, sums: none",
       [&] {
         at::softmax(at::relu(r({3, 5})) + r({3, 5}) * 2, -1).sum();
       },
       0, ""},
  };
  for (const auto& c : cases) {
    FlopCount count;
    {
      ProductFlopCounter counter;
      c.run();
      count = counter.count();
    }
    EXPECT_EQ(count.flops, c.flops) << c.what;
    if (c.op.empty()) {
      EXPECT_TRUE(count.by_op.empty()) << c.what;
      continue;
    }
    ASSERT_EQ(count.by_op.size(), 1u) << c.what << ": counted under " << count.by_op.begin()->first;
    EXPECT_EQ(count.by_op.begin()->first, c.op) << c.what;
  }
}

TEST(FlopCount, ProductsOfOtherThreadsAreNotCounted) {
  const at::Tensor a = at::randn({8, 8});
  ProductFlopCounter counter;
  double other = -1;
  std::thread t([&] {
    at::mm(a, a);  // outside any counter of its own
    ProductFlopCounter own;
    at::mm(a, a);
    other = own.count().flops;
  });
  t.join();
  EXPECT_EQ(counter.count().flops, 0);
  EXPECT_EQ(other, 2 * 8 * 8 * 8);
  at::mm(a, a);
  EXPECT_EQ(counter.count().flops, 2 * 8 * 8 * 8);
}

// The TorchScript interpreter calls operators with its whole stack, on
// which the first product's (B, 7) result lies under the second's operands.
TEST(FlopCount, AScriptedProductIsReadFromItsOwnOperandsNotTheValuesAroundThem) {
  testing::TempDir tmp;
  torch::jit::Module m("__torch__.TwoProducts");
  m.register_parameter("w", at::randn({5, 7}), false);
  m.define("def forward(self, x):\n    return torch.matmul(x, self.w) + torch.matmul(x, self.w)\n");
  auto model = scripted(tmp, m, "two");
  EXPECT_EQ(count_training_flops_per_example(*model, at::randn({4, 5}), at::randint(7, {4}, at::kLong)),
            3 * 2 * (2 * 5 * 7));
}

TEST(FlopCount, AnMlpModuleCountsThreeTimesTwoFlopsPerWeight) {
  testing::TempDir tmp;
  ModelConfig builtin;
  builtin.kind = "mlp";
  builtin.mlp_hidden = 32;
  auto mlp = make_model(builtin, 0, 1);
  save_mlp_module(*mlp, tmp.path("mlp.pt"));  // addmm with the bias, as nn.Linear
  ModelConfig cfg;
  cfg.kind = "torchscript";
  cfg.path = tmp.path("mlp.pt");
  auto model = make_model(cfg, 0, 1);
  const at::Tensor x = at::rand({8, 1, 28, 28}), y = at::randint(10, {8}, at::kLong);
  const double weights = 784 * 32 + 32 * 32 + 32 * 10;  // the biases are added, not multiplied
  EXPECT_EQ(count_training_flops_per_example(*model, x, y), 3 * 2 * weights);
  // The same figure is what a run charges, unless model.flops_per_sample gives one.
  const ModelFlops counted = model_training_flops(cfg, *model, x, y);
  EXPECT_EQ(counted.source, "counted");
  EXPECT_EQ(counted.per_example, 3 * 2 * weights);
  cfg.flops_per_sample = 1234;
  auto given_model = make_model(cfg, 0, 1);
  const ModelFlops given = model_training_flops(cfg, *given_model, x, y);
  EXPECT_EQ(given.source, "model.flops_per_sample");
  EXPECT_EQ(given.per_example, 1234);
  // The built-in MLP keeps its formula, 6 x parameters (biases included).
  const ModelFlops formula = model_training_flops(builtin, *mlp, x, y);
  EXPECT_EQ(formula.source, "formula");
  EXPECT_EQ(formula.per_example, 6.0 * double(mlp->num_params()));
}

TEST(FlopCount, AConvModuleCountsItsClosedForm) {
  testing::TempDir tmp;
  at::manual_seed(2);
  torch::jit::Module m("__torch__.ConvNet");
  m.register_parameter("c1", at::randn({4, 1, 3, 3}) * 0.3, false);
  m.register_parameter("b1", at::zeros({4}), false);
  m.register_parameter("c2", at::randn({8, 4, 3, 3}) * 0.3, false);
  m.register_parameter("fc", at::randn({72, 10}) * 0.1, false);
  m.define(R"(
def forward(self, x):
    h = torch.relu(torch.conv2d(x, self.c1, self.b1, [1, 1], [1, 1]))
    h = torch.relu(torch.conv2d(h, self.c2, None, [2, 2], [0, 0]))
    return torch.matmul(h.reshape([x.size(0), 72]), self.fc)
)");
  auto model = scripted(tmp, m, "conv");
  // (1,8,8) -> 4 x (8,8), 9 taps each -> 8 x (3,3), 4 x 9 taps each -> 10 logits from 72.
  const double macs = 4 * 8 * 8 * (1 * 9) + 8 * 3 * 3 * (4 * 9) + 72 * 10;
  EXPECT_EQ(count_training_flops_per_example(*model, at::rand({5, 1, 8, 8}), at::randint(10, {5}, at::kLong)),
            3 * 2 * macs);
}

// A GPT-like module in TorchScript: token and position embeddings, L
// pre-LayerNorm blocks (fused QKV, causal softmax attention over H heads,
// a 4C GELU MLP, biases everywhere), final LayerNorm, head tied to the
// token embedding. Parameters not multiplied by anything: the position
// embedding, the biases and the LayerNorm scales and shifts.
struct GptShape {
  int64_t V = 32, C = 16, T = 8, L = 2, H = 2;
};
torch::jit::Module gpt_like_module(const GptShape& s) {
  at::manual_seed(3);
  auto w = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.05; };
  torch::jit::Module m("__torch__.Gpt");
  m.register_parameter("wte", w({s.V, s.C}), false);
  m.register_parameter("wpe", w({s.T, s.C}), false);
  m.register_parameter("ln_w", at::ones({s.C}), false);
  m.register_parameter("ln_b", at::zeros({s.C}), false);
  m.register_buffer("mask", at::triu(at::full({s.T, s.T}, -INFINITY), 1));
  std::string calls;
  for (int64_t l = 0; l < s.L; ++l) {
    torch::jit::Module b("__torch__.Block" + std::to_string(l));
    b.register_parameter("ln1_w", at::ones({s.C}), false);
    b.register_parameter("ln1_b", at::zeros({s.C}), false);
    b.register_parameter("qkv_w", w({s.C, 3 * s.C}), false);
    b.register_parameter("qkv_b", at::zeros({3 * s.C}), false);
    b.register_parameter("proj_w", w({s.C, s.C}), false);
    b.register_parameter("proj_b", at::zeros({s.C}), false);
    b.register_parameter("ln2_w", at::ones({s.C}), false);
    b.register_parameter("ln2_b", at::zeros({s.C}), false);
    b.register_parameter("fc_w", w({s.C, 4 * s.C}), false);
    b.register_parameter("fc_b", at::zeros({4 * s.C}), false);
    b.register_parameter("out_w", w({4 * s.C, s.C}), false);
    b.register_parameter("out_b", at::zeros({s.C}), false);
    const std::string C = std::to_string(s.C), H = std::to_string(s.H), hs = std::to_string(s.C / s.H);
    b.define(R"(
def forward(self, x, mask):
    B = x.size(0)
    T = x.size(1)
    h = torch.layer_norm(x, [)" +
             C + R"(], self.ln1_w, self.ln1_b, 1e-5, False)
    qkv = torch.matmul(h, self.qkv_w) + self.qkv_b
    q, k, v = qkv.split()" +
             C + R"(, 2)
    q = q.view([B, T, )" +
             H + ", " + hs + R"(]).transpose(1, 2)
    k = k.view([B, T, )" +
             H + ", " + hs + R"(]).transpose(1, 2)
    v = v.view([B, T, )" +
             H + ", " + hs + R"(]).transpose(1, 2)
    att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * 0.5 + mask[:T, :T], -1)
    y = torch.matmul(att, v).transpose(1, 2).reshape([B, T, )" +
             C + R"(])
    x = x + torch.matmul(y, self.proj_w) + self.proj_b
    h = torch.layer_norm(x, [)" +
             C + R"(], self.ln2_w, self.ln2_b, 1e-5, False)
    return x + torch.matmul(torch.gelu(torch.matmul(h, self.fc_w) + self.fc_b), self.out_w) + self.out_b
)");
    m.register_module("h" + std::to_string(l), b);
    calls += "    x = self.h" + std::to_string(l) + ".forward(x, self.mask)\n";
  }
  m.define(R"(
def forward(self, idx):
    x = torch.embedding(self.wte, idx) + self.wpe[:idx.size(1)]
)" + calls +
           R"(    x = torch.layer_norm(x, [)" + std::to_string(s.C) + R"(], self.ln_w, self.ln_b, 1e-5, False)
    return torch.matmul(x, self.wte.t())
)");
  return m;
}

// The usual estimate of a transformer's training FLOPs per token is 6 x
// parameters plus attention, 12 L T C (Q K^T and the weighted values, as
// the built-in GPT counts them). Counting gives exactly 6 per multiplied
// parameter plus the same attention, so it sits below the estimate by 6 per
// parameter that is only added (position embedding, biases, norms): here
// 576 of 7232 parameters, 8%; at GPT-2 small's size under 1%.
TEST(FlopCount, AGptLikeModuleCountsSixFlopsPerMultipliedParameterPerTokenPlusAttention) {
  testing::TempDir tmp;
  const GptShape s;
  auto model = scripted(tmp, gpt_like_module(s), "gpt");
  const int64_t B = 3;
  const at::Tensor x = at::randint(s.V, {B, s.T}, at::kLong), y = at::randint(s.V, {B, s.T}, at::kLong);
  const double counted = count_training_flops_per_example(*model, x, y);
  const double multiplied = double(s.L * 12 * s.C * s.C + s.V * s.C);  // QKV, proj, MLP; the tied head once
  const double attention = 12.0 * double(s.L * s.T * s.C);             // per token
  EXPECT_EQ(counted, (6 * multiplied + attention) * double(s.T));
  const double params = double(model->num_params());
  const double added = params - multiplied;
  ASSERT_EQ(added, double(s.T * s.C + s.L * (9 * s.C + 4 * s.C) + 2 * s.C));
  const double estimate = (6 * params + attention) * double(s.T);
  EXPECT_NEAR(counted, estimate, estimate * added / params);
  EXPECT_LT(counted, estimate);
}

// A module whose training path runs one more product than its evaluation
// path, and draws dropout masks from the default generator.
torch::jit::Module dropout_module() {
  at::manual_seed(4);
  torch::jit::Module m("__torch__.Drop");
  m.register_attribute("training", c10::BoolType::get(), true);  // as a scripted nn.Module has it
  m.register_parameter("w", at::randn({6, 5}), false);
  m.register_parameter("extra", at::randn({5, 5}), false);
  m.define(R"(
def forward(self, x):
    h = torch.dropout(torch.matmul(x, self.w), 0.5, self.training)
    if self.training:
        h = torch.matmul(h, self.extra)
    return h
)");
  return m;
}

TEST(FlopCount, TheCountingPassTakesTheTrainingPath) {
  testing::TempDir tmp;
  auto model = scripted(tmp, dropout_module(), "drop");
  model->eval();  // as the observer's evaluation model may be
  const at::Tensor x = at::randn({4, 6}), y = at::randint(5, {4}, at::kLong);
  EXPECT_EQ(count_training_flops_per_example(*model, x, y), 3 * 2 * (6 * 5 + 5 * 5));
}

TEST(FlopCount, TheCountingPassChangesNoRandomStateParameterGradientModeOrBatch) {
  testing::TempDir tmp;
  auto model = scripted(tmp, dropout_module(), "drop");
  const at::Tensor x = at::randn({4, 6}), y = at::randint(5, {4}, at::kLong);
  const at::Tensor x0 = x.clone(), y0 = y.clone();
  std::vector<at::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  for (bool training : {true, false}) {
    model->train(training);
    at::manual_seed(9);
    const at::Tensor expected = at::rand({3});  // the draws a run would make next
    at::manual_seed(9);
    EXPECT_GT(count_training_flops_per_example(*model, x, y), 0);
    EXPECT_TRUE(at::equal(at::rand({3}), expected)) << "the dropout masks' draws leaked into the run's";
    EXPECT_EQ(model->is_training(), training);
  }
  const auto after = model->parameters();
  for (size_t k = 0; k < after.size(); ++k) {
    EXPECT_TRUE(at::equal(after[k], before[k])) << k;
    EXPECT_FALSE(after[k].grad().defined()) << k;
  }
  EXPECT_TRUE(at::equal(x, x0));
  EXPECT_TRUE(at::equal(y, y0));
}

}  // namespace
}  // namespace atl
