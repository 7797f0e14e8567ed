// train.precision = bf16: the training forward's products run in bf16 while
// weights, gradients, optimizer state and evaluation stay fp32; a bf16 run
// trains every method close to its fp32 twin, resumes bitwise, reaches
// TorchScript modules, and machines without bf16 are refused with what to
// use instead.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "model/causal_attention.h"
#include "model/precision.h"
#include "run_series.h"
#include "test_util.h"
#include "tiny_data.h"
#include "torchscript_modules.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

bool bf16_here() { return bf16_unavailable_reason(this_cpu_bf16_features()).empty(); }

TEST(Precision, TheConfigAcceptsFp32AndBf16AndNamesThemWhenGivenAnythingElse) {
  Config cfg = tiny_config("ddp", 2);
  for (const char* ok : {"fp32", "bf16", "auto"}) {
    cfg.train.precision = ok;
    for (const auto& problem : validate(cfg)) EXPECT_EQ(problem.find("precision"), std::string::npos) << problem;
  }
  cfg.train.precision = "fp16";
  std::string all;
  for (const auto& problem : validate(cfg)) all += problem;
  EXPECT_NE(all.find("train.precision"), std::string::npos) << all;
  EXPECT_NE(all.find("fp32"), std::string::npos) << all;
  EXPECT_NE(all.find("bf16"), std::string::npos) << all;
}

TEST(Precision, Bf16IsRefusedWithoutOneDnnOrAvx512AndTheMessageSaysToUseFp32) {
  CpuBf16Features f;
  f.onednn = true;
  f.avx512_core = true;
  EXPECT_EQ(bf16_unavailable_reason(f), "");
  f.avx512_core = false;
  EXPECT_NE(bf16_unavailable_reason(f).find("AVX-512"), std::string::npos);
  EXPECT_NE(bf16_unavailable_reason(f).find("train.precision = 'fp32'"), std::string::npos);
  f.avx512_core = true;
  f.onednn = false;
  EXPECT_NE(bf16_unavailable_reason(f).find("oneDNN"), std::string::npos);
  EXPECT_NE(bf16_unavailable_reason(f).find("train.precision = 'fp32'"), std::string::npos);
  // This machine: fp32 is always allowed; bf16 exactly when the check says so.
  EXPECT_NO_THROW(require_precision_supported("fp32"));
  if (bf16_here()) {
    EXPECT_NO_THROW(require_precision_supported("bf16"));
  } else {
    EXPECT_THROW(require_precision_supported("bf16"), std::invalid_argument);
  }
}

TEST(Precision, AutoPicksBf16OnlyWhereTheCpuMultipliesBf16NativelyAndTheRunSaysWhichItTrainedIn) {
  CpuBf16Features f;
  EXPECT_EQ(resolve_precision("auto", f), "fp32");
  f.onednn = f.avx512_core = true;  // AVX-512 without native bf16: emulated, slower than fp32
  EXPECT_EQ(resolve_precision("auto", f), "fp32");
  f.avx512_bf16 = true;
  EXPECT_EQ(resolve_precision("auto", f), "bf16");
  f.onednn = false;
  EXPECT_EQ(resolve_precision("auto", f), "fp32");
  // Explicit choices are kept whatever the CPU.
  EXPECT_EQ(resolve_precision("fp32", f), "fp32");
  EXPECT_EQ(resolve_precision("bf16", CpuBf16Features{}), "bf16");
  // A run with auto trains in this machine's choice and records it in its start event.
  Config cfg = tiny_config("ddp", 2);
  cfg.train.steps = 2;
  cfg.train.precision = "auto";
  const RunSummary s = simulate(cfg);
  const auto start = nlohmann::json::parse(s.events.front());
  EXPECT_EQ(start.at("precision"), resolve_precision("auto"));
  const CpuBf16Features here = this_cpu_bf16_features();
  EXPECT_EQ(start.at("precision"), here.onednn && here.avx512_core && here.avx512_bf16 ? "bf16" : "fp32");
}

TEST(Precision, InsideTheScopeProductsAreBf16AndGradientsReachTheFp32WeightsInFp32) {
  if (!bf16_here()) GTEST_SKIP() << bf16_unavailable_reason(this_cpu_bf16_features());
  at::manual_seed(1);
  const at::Tensor w = at::randn({6, 5}).requires_grad_(), x = at::randn({4, 5});
  const at::Tensor a = at::randn({3, 4, 3 * 8}).requires_grad_();  // q, k and v of 2 heads of 4
  at::Tensor y, z;
  {
    Bf16Forward scope("bf16");
    EXPECT_TRUE(at::autocast::is_cpu_enabled());
    y = at::linear(x, w);
    z = causal_attention(a, 2, 0, true);
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);
    EXPECT_EQ(z.scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_cpu_enabled()) << "the scope ends with the forward";
  (y.to(at::kFloat).sum() + z.to(at::kFloat).sum()).backward();
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
  EXPECT_EQ(a.grad().scalar_type(), at::kFloat);
  // bf16 keeps 8 bits of mantissa: the product is the fp32 one to ~1e-2.
  EXPECT_TRUE(at::allclose(y.to(at::kFloat), at::linear(x, w).detach(), 3e-2, 3e-2));
  EXPECT_FALSE(at::equal(y.to(at::kFloat), at::linear(x, w).detach())) << "the product really was bf16";
  // fp32 precision opens nothing.
  {
    Bf16Forward scope("fp32");
    EXPECT_FALSE(at::autocast::is_cpu_enabled());
  }
}

TEST(Precision, ABf16RunOfEachMethodTrainsCloseToItsFp32TwinWithFp32Weights) {
  if (!bf16_here()) GTEST_SKIP() << bf16_unavailable_reason(this_cpu_bf16_features());
  testing::TempDir tmp;
  for (const char* strategy : {"ddp", "diloco", "demo"}) {
    Config cfg = tiny_config(strategy, 2);
    cfg.optim.lr = 1e-2;
    cfg.run.out_dir = tmp.str();
    cfg.run.name = std::string(strategy) + "_fp32";
    const RunSummary fp32 = train(cfg);
    cfg.train.precision = "bf16";
    cfg.run.name = std::string(strategy) + "_bf16";
    const RunSummary bf16 = train(cfg);
    const auto l32 = series(fp32, "train", "loss"), l16 = series(bf16, "train", "loss");
    ASSERT_EQ(l32.size(), l16.size());
    EXPECT_NE(l32, l16) << strategy << ": bf16 changed the arithmetic";
    for (size_t k = 0; k < l32.size(); ++k) EXPECT_NEAR(l16[k], l32[k], 0.05 * l32[k]) << strategy << " log " << k;
    const auto v = series(bf16, "eval", "val_loss");
    ASSERT_GE(v.size(), 2u);
    EXPECT_LT(v.back(), v.front()) << strategy;
    EXPECT_NEAR(bf16.final_val_loss, fp32.final_val_loss, 0.05 * fp32.final_val_loss) << strategy;
    // The kept weights are the fp32 masters.
    const std::string weights = testing::read_text(fs::path(bf16.run_dir) / "model.safetensors");
    EXPECT_NE(weights.find("\"F32\""), std::string::npos);
    EXPECT_EQ(weights.find("\"BF16\""), std::string::npos);
  }
}

TEST(Precision, AStoppedAndResumedBf16RunMatchesTheUninterruptedRunBitwise) {
  if (!bf16_here()) GTEST_SKIP() << bf16_unavailable_reason(this_cpu_bf16_features());
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.train.precision = "bf16";
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);
  cfg.run.name = "resumed";
  cfg.run.stop_at = 10;
  cfg.run.checkpoint_every = 5;
  ASSERT_EQ(train(cfg).stopped_at, 10);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  const RunSummary resumed = train(cfg);
  EXPECT_EQ(series(whole, "train", "loss"), series(resumed, "train", "loss"));
  EXPECT_EQ(whole.final_val_loss, resumed.final_val_loss);
}

TEST(Precision, Bf16ReachesTheProductsInsideATorchScriptModule) {
  if (!bf16_here()) GTEST_SKIP() << bf16_unavailable_reason(this_cpu_bf16_features());
  testing::TempDir tmp;
  Config cfg = tiny_config("ddp", 2);
  TokenModuleOptions o;
  o.vocab = load_token_data(tiny_text_dir()).vocab_size;
  cfg.model.kind = "torchscript";
  cfg.model.path = tmp.path("token.pt");
  save_token_module(cfg.model.path, o);
  cfg.model.flops_per_sample = 6.0 * double(2 * o.vocab * o.dim) * 16;
  cfg.network.compute_time = "flops";
  cfg.optim.lr = 3e-2;
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "fp32";
  const RunSummary fp32 = train(cfg);
  cfg.train.precision = "bf16";
  cfg.run.name = "bf16";
  const RunSummary bf16 = train(cfg);
  const auto l32 = series(fp32, "train", "loss"), l16 = series(bf16, "train", "loss");
  EXPECT_NE(l32, l16) << "the module's products ran in bf16";
  ASSERT_EQ(l32.size(), l16.size());
  for (size_t k = 0; k < l32.size(); ++k) EXPECT_NEAR(l16[k], l32[k], 0.05 * l32[k]) << "log " << k;
}

}  // namespace
}  // namespace atl
