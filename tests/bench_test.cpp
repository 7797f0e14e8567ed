// `atoll bench` as a program: which groups run, what each line says, the JSON
// file, rejected input. Speed itself is never asserted here (benchmarks print
// figures; these machines are shared and noisy).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "atoll/bench.h"
#include "atoll/train.h"
#include "bench/op_timer.h"
#include "compress/codec_names.h"
#include "strategy/table.h"
#include "test_util.h"
#include "train/threads.h"
#include "util/machine.h"

namespace atl {
namespace {

// A tiny GPT so that the strategy group's ten runs take a few seconds.
std::vector<std::string> tiny_model() {
  return {"model.n_layer=1",       "model.n_head=2",       "model.n_embd=16",
          "model.block_size=16",   "train.batch_size=2",   "diloco.inner_steps=20",
          "noloco.inner_steps=10", "palsgd.inner_steps=8", "palsgd.ddp_warmup_steps=4"};
}

TEST(Bench, EveryFigureOfTheChosenGroupsIsPrintedWithItsRatioAndWrittenToJson) {
  testing::TempDir dir;
  BenchOptions opts;
  opts.quick = true;
  opts.groups = {"codecs", "allreduce"};
  opts.overrides = tiny_model();
  opts.json_path = dir.path("bench.json");
  std::ostringstream out;
  const auto figures = run_benchmarks(opts, out);

  // Quick allreduce: 2 and 4 ranks at one size; codecs: every codec of the
  // table but the shorthands (fp4 is fp4-e3m0).
  int allreduce = 0, codecs = 0;
  for (const auto& f : figures) {
    (f.group == "allreduce" ? allreduce : codecs) += 1;
    EXPECT_GT(f.value, 0) << f.name;
    EXPECT_GT(f.reference_value, 0) << f.name;
    EXPECT_DOUBLE_EQ(f.ratio, f.value / f.reference_value) << f.name;
    EXPECT_NE(out.str().find("[" + f.group + "] " + f.name + ": "), std::string::npos) << f.name;
  }
  EXPECT_EQ(allreduce, 2);
  std::vector<std::string> codec_figures, named_codecs;
  for (const auto& f : figures)
    if (f.group == "codecs") codec_figures.push_back(f.name.substr(0, f.name.find(' ')));
  for (const CodecInfo& c : codec_table())
    if (!c.shorthand_for) named_codecs.push_back(c.name);
  EXPECT_EQ(codec_figures, named_codecs);
  EXPECT_EQ(codecs, int(named_codecs.size()));
  // The all-reduce figures carry the >= 0.30 target, met or not by the ratio.
  for (const auto& f : figures) {
    if (f.group != "allreduce") continue;
    EXPECT_EQ(f.target, ">= 0.30");
    EXPECT_EQ(f.target_met, f.ratio >= 0.30);
  }
  // gloo ran first in bench_groups() order, but was not chosen.
  EXPECT_EQ(out.str().find("== gloo"), std::string::npos);
  EXPECT_LT(out.str().find("== allreduce"), out.str().find("== codecs"));

  std::ifstream file(opts.json_path);
  const auto json = nlohmann::json::parse(file);
  ASSERT_EQ(json.size(), figures.size());
  EXPECT_EQ(json[0]["name"], figures[0].name);
  EXPECT_DOUBLE_EQ(json[0]["ratio"].get<double>(), figures[0].ratio);
}

TEST(Bench, StrategyGroupReportsEveryMultiWorkerMethodAgainstLocalAdamW) {
  BenchOptions opts;
  opts.quick = false;  // quick would shorten diloco.inner_steps to 100
  opts.groups = {"strategies"};
  opts.overrides = tiny_model();
  std::ostringstream out;
  const auto figures = run_benchmarks(opts, out);
  std::vector<std::string> names;
  for (const auto& f : figures) {
    names.push_back(f.name.substr(0, f.name.find(' ')));
    EXPECT_EQ(f.reference, "local AdamW training step");
    EXPECT_GT(f.reference_value, 0);
    EXPECT_EQ(f.target.empty(), names.back() == "demo") << f.name;
  }
  // Every method of the table in its order, but the one-worker ones: local
  // AdamW alone is the reference every figure is measured against.
  std::vector<std::string> multi_worker;
  for (const Method& m : strategy_table())
    if (!(m.traits & kOneWorker)) multi_worker.push_back(m.name);
  EXPECT_EQ(names, multi_worker);
}

// The profile group splits a tiny GPT's step into kinds of op whose shares
// sum to the whole step, and names its largest ops.
TEST(Bench, ProfileSharesOfAStepAddUpToTheStep) {
  BenchOptions opts;
  opts.groups = {"profile"};
  opts.quick = true;
  opts.overrides = tiny_model();
  std::ostringstream out;
  const std::vector<BenchFigure> figures = run_benchmarks(opts, out);
  double total = 0;
  int shares = 0;
  for (const auto& f : figures) {
    if (f.name.rfind("default GPT fp32, 1 worker", 0) != 0 || f.name.find(": share of ") == std::string::npos) continue;
    EXPECT_GE(f.value, 0) << f.name;
    total += f.value;
    ++shares;
  }
  EXPECT_EQ(shares, 9) << out.str();
  EXPECT_NEAR(total, 100.0, 0.5) << out.str();
  EXPECT_NE(out.str().find("aten::mm"), std::string::npos) << "the products are among the largest ops: " << out.str();
}

// An op timer sees the ops of its own thread only, each op's own time once.
TEST(OpTimer, TimesTheOwnTimeOfTheCallingThreadsOpsOnly) {
  const at::Tensor a = at::randn({256, 256});
  bench::OpTimer timer;
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor c = at::mm(a, a);
  std::thread([&] { at::Tensor d = at::relu(a); }).join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& ops = timer.seconds_by_op();
  ASSERT_TRUE(ops.count("aten::mm")) << "the product was not timed";
  EXPECT_GT(ops.at("aten::mm"), 0);
  EXPECT_FALSE(ops.count("aten::relu")) << "another thread's op was timed";
  double sum = 0;
  for (const auto& [op, s] : ops) sum += s;
  EXPECT_LE(sum, wall);
  EXPECT_EQ(bench::op_kind("aten::mm"), "matrix products");
  EXPECT_EQ(bench::op_kind("aten::gelu_backward"), "GELU");
  EXPECT_EQ(bench::op_kind("aten::copy_"), "copies");
  EXPECT_EQ(bench::op_kind("atl::onednn_gemm"), "matrix products") << "oneDNN's sgemm (train.gemm = onednn, auto)";
  EXPECT_EQ(bench::op_kind("atl::routed_linear"), "other") << "a scope whose products are timed inside it";
  EXPECT_EQ(bench::op_kind("autograd::engine::evaluate_function: MmBackward0"), "other");
  for (const char* op : {"aten::mm", "aten::gelu", "aten::_softmax", "aten::copy_", "aten::native_layer_norm",
                         "aten::nll_loss", "aten::add", "MmBackward0"}) {
    const auto& kinds = bench::op_kinds();
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), bench::op_kind(op)), kinds.end()) << op;
  }
}

TEST(Bench, UnknownGroupIsRejectedNamingTheGroupsThatExist) {
  BenchOptions opts;
  opts.groups = {"gemm"};
  std::ostringstream out;
  const std::string msg = testing::invalid_argument_message([&] { run_benchmarks(opts, out); });
  EXPECT_NE(msg.find("unknown benchmark group 'gemm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("compute, profile, allreduce, codecs, strategies, simulation"), std::string::npos) << msg;
  EXPECT_TRUE(out.str().empty());
}

}  // namespace
}  // namespace atl

namespace atl {
namespace {

// Every start event and bench names the machine: the CPU, its family and
// model numbers, and the BLAS kernels, with OPENBLAS_CORETYPE as the
// environment set it (read, never changed).
TEST(MachineInfo, NamesTheCpuItsFamilyAndTheBlasKernelsInUse) {
  const MachineInfo m = machine_info();
  EXPECT_FALSE(m.cpu.empty());
  EXPECT_FALSE(m.vendor.empty());
  EXPECT_GT(m.family, 0);
  EXPECT_TRUE(m.isa == "avx512_bf16" || m.isa == "avx512" || m.isa == "avx2" || m.isa == "sse") << m.isa;
  EXPECT_EQ(m.isa.rfind("avx512", 0) == 0, bool(__builtin_cpu_supports("avx512f")));
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(m.blas_coretype, coretype ? coretype : "");
  const std::string line = describe_machine(m);
  EXPECT_NE(line.find(m.cpu), std::string::npos) << line;
  EXPECT_NE(line.find("family " + std::to_string(m.family)), std::string::npos) << line;
  if (!m.blas_kernels.empty()) {
    EXPECT_NE(line.find("OpenBLAS " + m.blas_kernels + " kernels"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace atl
