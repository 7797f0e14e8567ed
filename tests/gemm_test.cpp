// train.gemm: oneDNN's sgemm as the fp32 GEMM. Its products against ATen's,
// through strided and transposed views; the Linear layer and attention on
// it; a whole run on it, deterministic and close to the OpenBLAS one.
#include "model/gemm.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/functional/linear.h>

#include <nlohmann/json.hpp>

#include "atoll/config.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "model/batched_matmul.h"
#include "model/causal_attention.h"
#include "tiny_data.h"

using namespace atl;

namespace {

// Runs the body with train.gemm = onednn, then puts OpenBLAS back.
struct OneDnnProducts {
  OneDnnProducts() { set_gemm("onednn"); }
  ~OneDnnProducts() { set_gemm("openblas"); }
};

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  const double scale = std::max(1.0, want.abs().max().item<double>());
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-5 * scale) << what;
}

}  // namespace

TEST(Gemm, OneDnnProductsEqualAtensToRoundingThroughStridedAndTransposedViews) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  const at::Tensor a = at::randn({3, 40, 2 * 24}), b = at::randn({3, 2 * 24, 56});
  // a's second half (strided), b's transpose read as stored, into an output's columns.
  const at::Tensor av = a.narrow(2, 24, 24), bt = b.narrow(1, 24, 24).transpose(1, 2).contiguous().transpose(1, 2);
  at::Tensor out = at::full({3, 40, 2 * 56}, 7.0);
  onednn_bmm(out.narrow(2, 56, 56), av, bt);
  expect_close(out.narrow(2, 56, 56), at::bmm(av, bt), "strided product");
  EXPECT_TRUE(at::equal(out.narrow(2, 0, 56), at::full({3, 40, 56}, 7.0))) << "wrote outside its columns";
  at::Tensor c = at::empty({40, 56});
  onednn_mm(c, a[0].narrow(1, 0, 24), b[0].narrow(0, 0, 24));
  expect_close(c, at::mm(a[0].narrow(1, 0, 24), b[0].narrow(0, 0, 24)), "2-D product");
}

TEST(Gemm, LinearAndAttentionOnOneDnnMatchOpenBlasToRoundingAndOpenBlasIsTheModulesOwnPath) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  const at::Tensor x0 = at::randn({4, 16, 32}), w0 = at::randn({48, 32}), b0 = at::randn({48}),
                   gy = at::randn({4, 16, 48});
  auto run = [&](bool with_bias) {
    at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true),
               b = with_bias ? b0.clone().requires_grad_(true) : at::Tensor();
    at::Tensor y = linear(x, w, b);
    y.backward(gy);
    return std::vector<at::Tensor>{y.detach(), x.grad(), w.grad(), with_bias ? b.grad() : at::zeros({1})};
  };
  for (bool with_bias : {false, true}) {
    const auto openblas = run(with_bias);
    // With OpenBLAS it is torch::nn::Linear's forward, op for op.
    at::Tensor x = x0.clone().requires_grad_(true);
    EXPECT_TRUE(at::equal(openblas[0], torch::nn::functional::linear(x, w0, with_bias ? b0 : at::Tensor())));
    OneDnnProducts on;
    const auto onednn = run(with_bias);
    const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
    for (int i = 0; i < 4; ++i) expect_close(onednn[i], openblas[i], names[i]);
  }
  // Attention's products.
  const at::Tensor qkv0 = at::randn({2, 32, 3 * 32}), gq = at::randn({2, 32, 32});
  auto attend = [&] {
    at::Tensor qkv = qkv0.clone().requires_grad_(true);
    at::Tensor y = causal_attention(qkv, 4, 0, true);
    y.backward(gq);
    return std::pair{y.detach(), qkv.grad()};
  };
  const auto [y_blas, g_blas] = attend();
  OneDnnProducts on;
  const auto [y_dnn, g_dnn] = attend();
  expect_close(y_dnn, y_blas, "attention output");
  expect_close(g_dnn, g_blas, "attention gradient");
}

// A run on oneDNN repeats itself bit for bit, names its GEMM at start, and
// lands close to the same run on OpenBLAS (the products differ in the last
// bits only).
TEST(Gemm, ARunOnOneDnnIsDeterministicAndCloseToTheOpenBlasRun) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  Config cfg = tiny_config("ddp", 2);
  const RunSummary blas = simulate(cfg);
  cfg.train.gemm = "onednn";
  const RunSummary a = simulate(cfg), b = simulate(cfg);
  set_gemm("openblas");
  EXPECT_EQ(a.final_val_loss, b.final_val_loss);
  EXPECT_EQ(a.final_train_loss, b.final_train_loss);
  EXPECT_NEAR(a.final_val_loss, blas.final_val_loss, 1e-3);
  EXPECT_EQ(nlohmann::json::parse(a.events.front()).at("gemm"), "onednn");
  EXPECT_EQ(nlohmann::json::parse(blas.events.front()).at("gemm"), "openblas");
}

TEST(Gemm, TheConfigNamesBothLibrariesWhenGivenAnythingElse) {
  Config cfg = tiny_config("ddp", 2);
  cfg.train.gemm = "mkl";
  std::string all;
  for (const auto& problem : atl::validate(cfg)) all += problem;
  EXPECT_NE(all.find("train.gemm"), std::string::npos) << all;
  EXPECT_NE(all.find("openblas"), std::string::npos) << all;
  EXPECT_NE(all.find("onednn"), std::string::npos) << all;
  EXPECT_THROW(set_gemm("mkl"), std::invalid_argument);
}
