// train.gemm = auto: a dry step captures every fp32 product shape of a
// training step without moving the run, each shape goes where its table
// says (all-oneDNN routes multiply bit for bit as train.gemm = onednn), the
// start event shows the table, a resume multiplies with the routes its
// checkpoint holds whatever the process held before, and a table that is
// not one is refused naming its line.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/train.h"
#include "model/gemm.h"
#include "model/gemm_routes.h"
#include "run_series.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/gemm_choice.h"
#include "train/gradients.h"

namespace atl {
namespace {

// Puts train.gemm back to OpenBLAS (and auto's routes to none) on leaving.
struct GemmFor {
  explicit GemmFor(const std::string& name) { set_gemm(name); }
  ~GemmFor() {
    set_gemm_routes({});
    set_gemm("openblas");
  }
};

ModelConfig tiny_gpt() {
  ModelConfig m;
  m.n_layer = 2;
  m.n_head = 2;
  m.n_embd = 32;
  m.block_size = 16;
  m.dropout = 0;
  return m;
}

std::pair<at::Tensor, at::Tensor> batch(int64_t rows, int64_t vocab) {
  return {at::randint(vocab, {rows, 16}, at::kLong), at::randint(vocab, {rows, 16}, at::kLong)};
}

at::Tensor generator_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

// Loss and every gradient of one step of a fresh tiny GPT.
std::vector<at::Tensor> one_step(const std::pair<at::Tensor, at::Tensor>& b) {
  auto model = make_model(tiny_gpt(), 64, 7);
  const auto params = model->parameters();
  std::vector<at::Tensor> out{forward_backward(*model, params, b, "fp32", 1).detach()};
  for (const auto& p : params) out.push_back(p.grad().clone());
  return out;
}

}  // namespace

TEST(GemmAuto, ADryStepCapturesEveryLinearAndAttentionShapeAndLeavesNoTrace) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  GemmFor on("auto");
  auto model = make_model(tiny_gpt(), 64, 7);
  const auto params = model->parameters();
  const auto b = batch(4, 64);
  const at::Tensor rng_before = generator_state();
  const auto routes = measure_gemm_routes(*model, params, b, "fp32", 1, 1);
  EXPECT_TRUE(at::equal(generator_state(), rng_before)) << "the dry step moved the default generator";
  for (const auto& p : params) EXPECT_FALSE(p.grad().defined()) << "the dry step left a gradient";
  std::set<std::string> shapes;
  for (const auto& r : routes) {
    shapes.insert(describe(r.shape));
    EXPECT_GT(r.openblas_seconds, 0) << describe(r.shape);
    EXPECT_GT(r.onednn_seconds, 0) << describe(r.shape);
    EXPECT_EQ(r.gemm, faster_gemm(r.openblas_seconds, r.onednn_seconds)) << describe(r.shape);
  }
  EXPECT_EQ(shapes.size(), routes.size()) << "a shape twice";
  // B T = 64 rows, C = 32: c_attn's forward, input and weight gradients;
  // attention's scores per head (batch 4 of T x T x hs) and the tied head.
  for (const char* s : {"64 x 96 x 32 (N T), 1 thread", "64 x 32 x 96 (N N), 1 thread", "96 x 32 x 64 (T N), 1 thread",
                        "batch 4 of 16 x 16 x 16 (N T), 1 thread", "64 x 64 x 32 (N T), 1 thread"})
    EXPECT_TRUE(shapes.count(s)) << s << " not captured";
  // A second capture of a real step finds no shape the table lacks.
  set_gemm_routes(routes);
  start_product_capture();
  forward_backward(*model, params, b, "fp32", 1);
  for (const auto& s : stop_product_capture()) {
    bool known = false;
    for (const auto& r : routes) known = known || r.shape == s;
    EXPECT_TRUE(known) << describe(s) << " is issued by the step but has no route";
  }
}

TEST(GemmAuto, EveryProductGoesWhereItsRouteSaysAllOneDnnRoutesMultiplyAsTrainGemmOneDnn) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  const auto b = batch(4, 64);
  std::vector<at::Tensor> onednn, auto_onednn, auto_openblas;
  {
    GemmFor on("onednn");
    onednn = one_step(b);
  }
  {
    GemmFor on("auto");
    auto model = make_model(tiny_gpt(), 64, 7);
    auto routes = measure_gemm_routes(*model, model->parameters(), b, "fp32", 1, 1);
    for (auto& r : routes) r.gemm = Gemm::kOneDnn;
    set_gemm_routes(routes);
    auto_onednn = one_step(b);
    for (auto& r : routes) r.gemm = Gemm::kOpenBlas;
    set_gemm_routes(routes);
    auto_openblas = one_step(b);
  }
  ASSERT_EQ(onednn.size(), auto_onednn.size());
  bool any_differs = false;
  for (size_t i = 0; i < onednn.size(); ++i) {
    EXPECT_TRUE(at::equal(onednn[i], auto_onednn[i])) << "tensor " << i << " did not multiply in oneDNN";
    any_differs = any_differs || !at::equal(auto_openblas[i], auto_onednn[i]);
    EXPECT_TRUE(at::allclose(auto_openblas[i], auto_onednn[i], 1e-4, 1e-5)) << "tensor " << i;
  }
  EXPECT_TRUE(any_differs) << "all-OpenBLAS routes gave oneDNN's bits: the routes were not followed";
}

TEST(GemmAuto, TheStartEventShowsEachShapeItsLibraryAndBothTimes) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  Config cfg = tiny_config("ddp", 2);
  cfg.train.gemm = "auto";
  const RunSummary run = simulate(cfg);
  const auto start = nlohmann::json::parse(run.events.front());
  set_gemm("openblas");
  EXPECT_EQ(start.at("gemm"), "auto");
  const auto& routes = start.at("gemm_routes");
  ASSERT_GE(routes.size(), 10u) << start.dump();
  for (const auto& r : routes) {
    EXPECT_TRUE(r.at("gemm") == "openblas" || r.at("gemm") == "onednn") << r.dump();
    EXPECT_GT(r.at("openblas_ms").get<double>(), 0) << r.dump();
    EXPECT_GT(r.at("onednn_ms").get<double>(), 0) << r.dump();
  }
  EXPECT_TRUE(std::isfinite(run.final_val_loss));
}

TEST(GemmAuto, AResumeMultipliesWithItsCheckpointsRoutesWhateverTheProcessHeld) {
  if (!onednn_sgemm_available()) GTEST_SKIP() << "LibTorch has not loaded oneDNN's sgemm";
  testing::TempDir tmp;
  Config cfg = tiny_config("ddp", 2);
  cfg.train.gemm = "auto";
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "first";
  cfg.run.stop_at = 10;
  cfg.run.checkpoint_every = 5;
  ASSERT_EQ(train(cfg).stopped_at, 10);
  const std::string measured = routes_to_text(gemm_routes());
  ASSERT_FALSE(measured.empty());
  std::filesystem::copy(tmp.path("first"), tmp.path("second"), std::filesystem::copy_options::recursive);
  // Before each resume the process holds other routes: every shape in one
  // library, then in the other.
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  std::vector<double> losses;
  for (Gemm held : {Gemm::kOpenBlas, Gemm::kOneDnn}) {
    auto routes = routes_from_text(measured, "test");
    for (auto& r : routes) r.gemm = held;
    set_gemm_routes(routes);
    cfg.run.name = held == Gemm::kOpenBlas ? "first" : "second";
    const RunSummary resumed = train(cfg);
    EXPECT_EQ(routes_to_text(gemm_routes()), measured) << "resumed with the routes the process held";
    losses.push_back(resumed.final_val_loss);
  }
  set_gemm("openblas");
  EXPECT_EQ(losses[0], losses[1]);
}

TEST(GemmRoutes, TheTextRoundTripsAndATableThatIsNotOneIsRefusedNamingItsLine) {
  GemmRoute a, b;
  a.shape = {1, 4096, 2304, 768, 'N', 'T', 2};
  a.gemm = Gemm::kOneDnn;
  b.shape = {32, 128, 128, 48, 'N', 'T', 1};
  const auto back = routes_from_text(routes_to_text({a, b}), "x");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].shape == a.shape);
  EXPECT_EQ(back[0].gemm, Gemm::kOneDnn);
  EXPECT_TRUE(back[1].shape == b.shape);
  EXPECT_EQ(back[1].gemm, Gemm::kOpenBlas);
  EXPECT_EQ(describe(b.shape), "batch 32 of 128 x 128 x 48 (N T), 1 thread");
  EXPECT_EQ(describe_routes({a, b}), "1 of 2 fp32 product shapes in oneDNN, 1 in OpenBLAS");
  EXPECT_EQ(describe_routes({b}), "all 1 fp32 product shape in OpenBLAS");
  EXPECT_EQ(describe_routes({}), "no fp32 products to route");
  for (const char* bad :
       {"1 0 2 3 N N 1 openblas", "1 2 3 2147483648 N N 1 onednn", "1 2 3 4 X N 1 onednn", "1 2 3 4 N N 0 onednn",
        "1 2 3 4 N N 1 mkl", "1 2 3 4 N N 1 onednn extra", "1 2 3", "1 2 3 4 N N 1 onednn\n1 2 3 4 N N 1 openblas"}) {
    try {
      routes_from_text(bad, "ckpt");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("ckpt: GEMM route"), std::string::npos) << e.what();
    }
  }
}

TEST(GemmRoutes, NearTiesStayInOpenBlasAndOneDnnNeedsFivePercent) {
  EXPECT_EQ(faster_gemm(1.0, 0.96), Gemm::kOpenBlas);
  EXPECT_EQ(faster_gemm(1.0, 0.94), Gemm::kOneDnn);
  EXPECT_EQ(faster_gemm(1.0, 1.5), Gemm::kOpenBlas);
}

}  // namespace atl
