// Each kind of model reported as such: a language model in tokens with a
// perplexity, a classifier in examples with its accuracy, a regressor in
// examples with its loss alone — in summary.json, the metrics, the
// Markdown table (atoll compare) and the HTML report. On real tiny runs.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "atoll/data.h"
#include "atoll/report.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "util/format.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Two DDP workers, 6 steps, an evaluation every 3.
Config short_run(Config cfg, const TempDir& dir, const std::string& name) {
  cfg.strategy.name = "ddp";
  cfg.strategy.workers = 2;
  cfg.train.steps = 6;
  cfg.train.eval_every = 3;
  cfg.train.log_every = 3;
  cfg.train.eval_batches = 2;
  cfg.run.progress = false;
  cfg.run.out_dir = dir.str();
  cfg.run.name = name;
  return cfg;
}

// The MLP on generated 28 x 28 "images" of 10 classes (npy).
Config classifier(const TempDir& dir) {
  const std::string data = dir.path("images");
  fs::create_directories(data);
  at::manual_seed(5);
  const at::Tensor w = at::randn({784, 10});
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", 64}, {"val", 40}}) {
    const at::Tensor x = at::rand({n, 1, 28, 28});
    write_npy(data + "/" + split + "_inputs.npy", x);
    write_npy(data + "/" + split + "_targets.npy", (x.reshape({n, 784}) - 0.5).mm(w).argmax(1));
  }
  Config cfg;
  cfg.data.dataset = "npy";
  cfg.data.dir = data;
  cfg.model.kind = "mlp";
  cfg.model.mlp_hidden = 16;
  cfg.train.batch_size = 8;
  cfg.train.eval_batch_size = 16;
  return short_run(cfg, dir, "classifier");
}

// A TorchScript linear model of 4 features scored by MSE (float targets).
Config regressor(const TempDir& dir) {
  const std::string data = dir.path("table");
  fs::create_directories(data);
  at::manual_seed(6);
  const at::Tensor w = at::randn({4, 1});
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", 64}, {"val", 32}}) {
    const at::Tensor x = at::randn({n, 4});
    write_npy(data + "/" + split + "_inputs.npy", x);
    write_npy(data + "/" + split + "_targets.npy", x.mm(w).reshape({n}));
  }
  torch::jit::Module m("__torch__.Linear4");
  m.register_parameter("w", at::zeros({4, 1}), false);
  m.register_parameter("b", at::zeros({1}), false);
  m.define("def forward(self, x):\n    return (torch.mm(x, self.w) + self.b).reshape([x.size(0)])\n");
  m.save(dir.path("linear.pt"));
  Config cfg;
  cfg.data.dataset = "npy";
  cfg.data.dir = data;
  cfg.model.kind = "torchscript";
  cfg.model.path = dir.path("linear.pt");
  cfg.model.loss = "mse";
  cfg.model.flops_per_sample = 6 * 5;
  cfg.train.batch_size = 8;
  return short_run(cfg, dir, "regressor");
}

// One finished run of each kind, shared by the tests.
struct ThreeKinds {
  TempDir dir;
  std::string language, classification, regression;
  ThreeKinds() {
    train(short_run(tiny_config("ddp", 2), dir, "language"));
    train(classifier(dir));
    train(regressor(dir));
    language = dir.path("language");
    classification = dir.path("classifier");
    regression = dir.path("regressor");
  }
};
const ThreeKinds& kinds() {
  static const ThreeKinds k;
  return k;
}

nlohmann::json summary_of(const std::string& run) {
  return nlohmann::json::parse(testing::read_text(run + "/summary.json"));
}

// The evaluation events of a run folder.
std::vector<nlohmann::json> evals_of(const std::string& run) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(testing::read_text(run + "/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    if (e["event"] == "eval") out.push_back(e);
  }
  return out;
}

TEST(ReportTask, ALanguageModelIsCountedInTokensWithAPerplexity) {
  const nlohmann::json s = summary_of(kinds().language);
  EXPECT_EQ(s["task"], "language");
  EXPECT_GT(s["tokens_per_s"].get<double>(), 0);
  EXPECT_EQ(s["tokens"], 6 * 2 * 4 * 16) << "steps x workers x batch x block";
  EXPECT_DOUBLE_EQ(s["final_val_ppl"].get<double>(), std::exp(s["final_val_loss"].get<double>()));
  EXPECT_FALSE(s.contains("examples_per_s"));
  EXPECT_FALSE(s.contains("final_val_accuracy"));
  for (const auto& e : evals_of(kinds().language)) {
    EXPECT_TRUE(e.contains("val_ppl"));
    EXPECT_FALSE(e.contains("val_accuracy"));
  }
  const RunData r = load_run(kinds().language);
  EXPECT_EQ(r.task, "language");
  const std::string table = compare_runs({kinds().language});
  EXPECT_NE(table.find("| global batch tokens | final val loss | perplexity | vs first"), std::string::npos) << table;
  const std::string html = html_report({r}, {});
  EXPECT_NE(html.find("<th>perplexity</th>"), std::string::npos);
  EXPECT_EQ(html.find("<th>accuracy</th>"), std::string::npos);
  EXPECT_NE(html.find(" tokens</td>"), std::string::npos);
}

TEST(ReportTask, AClassifierIsCountedInExamplesWithItsAccuracyAndNoPerplexity) {
  const nlohmann::json s = summary_of(kinds().classification);
  EXPECT_EQ(s["task"], "classification");
  EXPECT_GT(s["examples_per_s"].get<double>(), 0);
  EXPECT_EQ(s["examples"], 6 * 2 * 8) << "steps x workers x batch";
  EXPECT_FALSE(s.contains("tokens_per_s"));
  EXPECT_FALSE(s.contains("final_val_ppl"));
  // The final evaluation covers the 40 validation examples: a whole number of them right.
  const double accuracy = s["final_val_accuracy"].get<double>();
  EXPECT_GE(accuracy, 0);
  EXPECT_LE(accuracy, 1);
  EXPECT_DOUBLE_EQ(accuracy * 40, std::round(accuracy * 40));
  const auto evals = evals_of(kinds().classification);
  ASSERT_EQ(evals.size(), 3u);
  for (const auto& e : evals) {
    EXPECT_FALSE(e.contains("val_ppl"));
    EXPECT_TRUE(e["val_accuracy"].is_number());
  }
  EXPECT_EQ(evals.back()["val_accuracy"].get<double>(), accuracy);

  const RunData r = load_run(kinds().classification);
  EXPECT_EQ(r.task, "classification");
  EXPECT_EQ(r.global_batch_examples, 16);
  EXPECT_EQ(r.final_val_accuracy, accuracy);
  const std::string table = compare_runs({kinds().classification});
  EXPECT_NE(table.find("| global batch examples | final val loss | accuracy | vs first"), std::string::npos) << table;
  EXPECT_NE(table.find(" | 16 | "), std::string::npos) << table;
  EXPECT_NE(table.find(format_number("| %.2f%% |", 100 * accuracy)), std::string::npos) << table;
  EXPECT_EQ(table.find("perplexity"), std::string::npos) << table;
  const std::string html = html_report({r}, {});
  EXPECT_NE(html.find("<th>accuracy</th>"), std::string::npos);
  EXPECT_NE(html.find(format_number("<td class=\"num\">%.1f%%</td>", 100 * accuracy)), std::string::npos);
  EXPECT_EQ(html.find("perplexity"), std::string::npos);
  EXPECT_NE(html.find(">96 examples</td>"), std::string::npos) << "trained on 6 x 16";
  EXPECT_EQ(html.find(" tokens</td>"), std::string::npos);
}

TEST(ReportTask, ARegressorIsCountedInExamplesWithItsLossAlone) {
  const nlohmann::json s = summary_of(kinds().regression);
  EXPECT_EQ(s["task"], "regression");
  EXPECT_GT(s["examples_per_s"].get<double>(), 0);
  EXPECT_EQ(s["examples"], 6 * 2 * 8);
  for (const char* absent : {"tokens_per_s", "final_val_ppl", "final_val_accuracy"})
    EXPECT_FALSE(s.contains(absent)) << absent;
  for (const auto& e : evals_of(kinds().regression)) {
    EXPECT_FALSE(e.contains("val_ppl"));
    EXPECT_FALSE(e.contains("val_accuracy"));
  }
  const RunData r = load_run(kinds().regression);
  EXPECT_EQ(r.task, "regression");
  const std::string table = compare_runs({kinds().regression});
  EXPECT_NE(table.find("| global batch examples | final val loss | vs first"), std::string::npos) << table;
  const std::string html = html_report({r}, {});
  EXPECT_EQ(html.find("perplexity"), std::string::npos);
  EXPECT_EQ(html.find("<th>accuracy</th>"), std::string::npos);
  EXPECT_NE(html.find(">96 examples</td>"), std::string::npos);
}

TEST(ReportTask, MixedKindsNameTheirUnitInEachCellAndLeaveOutFiguresThatDoNotApply) {
  const std::string table = compare_runs({kinds().language, kinds().classification});
  EXPECT_NE(table.find("| global batch | final val loss | perplexity | accuracy | vs first"), std::string::npos)
      << table;
  EXPECT_NE(table.find(" | 128 tokens | "), std::string::npos) << table;
  EXPECT_NE(table.find(" | 16 examples | "), std::string::npos) << table;
}

TEST(ReportTask, RunsMadeBeforeTheTaskWasRecordedTakeItFromTheirConfig) {
  auto task_of = [](const std::string& kind, const std::string& loss) {
    const std::string config = "[model]\nkind = \"" + kind + "\"\nloss = \"" + loss + "\"\n";
    return parse_run("runs/old", "{\"final_val_loss\": 2}", "{\"event\":\"start\"}\n", config).task;
  };
  EXPECT_EQ(task_of("gpt", "auto"), "language");
  EXPECT_EQ(task_of("mlp", "auto"), "classification");
  EXPECT_EQ(task_of("cnn", "auto"), "classification");
  EXPECT_EQ(task_of("torchscript", "mse"), "regression");
}

}  // namespace
}  // namespace atl
