// Evaluation: per-example losses, their mean and standard error, a
// classifier's accuracy, the full validation split, autograd off, and the
// interim sample left as it was.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "atoll/config.h"
#include "atoll/data.h"
#include "atoll/model.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "torchscript_modules.h"
#include "train/data_source.h"
#include "train/evaluation.h"

namespace atl {
namespace {

// Hands out `batches` in order, as the observer does.
BatchSource from(const std::vector<Batch>& batches) {
  auto next = std::make_shared<size_t>(0);
  return [&batches, next](Batch& b) {
    if (*next == batches.size()) return false;
    b = batches[(*next)++];
    return true;
  };
}

TEST(Evaluation, StandardErrorOfHandMadeLossesEqualsTheHandComputation) {
  // Mean 3; squared deviations 4 + 1 + 0 + 1 + 4 = 10; sample variance
  // 10 / 4 = 2.5; standard error sqrt(2.5 / 5) = sqrt(0.5).
  const EvalResult r = summarize_example_losses({1, 2, 3, 4, 5}, 64);
  EXPECT_DOUBLE_EQ(r.loss, 3.0);
  EXPECT_DOUBLE_EQ(r.se, std::sqrt(0.5));
  EXPECT_EQ(r.examples, 5);
  EXPECT_EQ(r.tokens, 5 * 64);
  // Equal losses: no spread; one example: no estimate of it; none: no mean.
  EXPECT_EQ(summarize_example_losses({2, 2, 2}, 1).se, 0.0);
  EXPECT_TRUE(std::isnan(summarize_example_losses({2}, 1).se));
  EXPECT_TRUE(std::isnan(summarize_example_losses({}, 1).loss));
}

// A model whose per-example loss is the first input column, and which
// records whether autograd was on when it was asked.
class SpyModel : public Model {
 public:
  SpyModel() { w = register_parameter("w", at::ones({1})); }
  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) override { return example_losses(x, y).mean(); }
  at::Tensor example_losses(const at::Tensor& x, const at::Tensor&) override {
    grad_mode_seen = grad_mode_seen || at::GradMode::is_enabled();
    at::Tensor l = x.select(1, 0) * w;  // (B)
    built_graph = built_graph || l.requires_grad();
    return l;
  }
  double flops_per_token() const override { return 1; }
  int64_t tokens_per_example() const override { return 1; }
  at::Tensor w;
  bool grad_mode_seen = false, built_graph = false;
};

TEST(Evaluation, BatchesOfExampleLossesGiveTheirMeanAndStandardErrorWithoutAutograd) {
  SpyModel model;
  const at::Tensor unused = at::zeros({3}, at::kLong);
  const std::vector<Batch> batches = {{at::tensor({1.0, 2.0, 3.0}, at::kFloat).view({3, 1}), unused},
                                      {at::tensor({4.0, 5.0}, at::kFloat).view({2, 1}), unused}};
  std::vector<double> each;
  const EvalResult r = evaluate_batches(model, from(batches), &each);
  EXPECT_EQ(each, (std::vector<double>{1, 2, 3, 4, 5}));
  EXPECT_DOUBLE_EQ(r.loss, 3.0);
  EXPECT_DOUBLE_EQ(r.se, std::sqrt(0.5));
  EXPECT_FALSE(model.grad_mode_seen);
  EXPECT_FALSE(model.built_graph);
  EXPECT_FALSE(model.w.grad().defined());
  EXPECT_TRUE(model.is_training()) << "evaluation restores the training mode it found";
}

TEST(Evaluation, GptEvaluationLeavesNoGradientsAndMatchesTheBatchLoss) {
  Config cfg = tiny_config("single", 1);
  DataSource data(cfg);
  auto model = make_model(cfg.model, data.vocab_size(), 7);
  const EvalResult r = evaluate_batches(*model, from(data.eval_batches()));
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
  // The per-example losses of a batch average to the batch loss.
  at::NoGradGuard no_grad;
  const Batch& b = data.eval_batches()[0];
  EXPECT_NEAR(model->example_losses(b.first, b.second).mean().item<double>(),
              model->loss(b.first, b.second).item<double>(), 1e-6);
  EXPECT_EQ(r.examples, cfg.train.eval_batches * cfg.train.batch_size);
  EXPECT_EQ(r.tokens, r.examples * cfg.model.block_size);
  EXPECT_GT(r.se, 0);
}

TEST(Evaluation, SampleEvaluationIsUnchangedFromTheMeanOfBatchLosses) {
  // Before per-example losses, an evaluation was the mean of the fixed
  // batches' mean losses. Every batch has the same size, so the mean over
  // examples is the same number up to float rounding.
  Config cfg = tiny_config("single", 1);
  cfg.train.eval_batches = 5;
  DataSource data(cfg);
  auto model = make_model(cfg.model, data.vocab_size(), 11);
  model->eval();
  double before = 0;
  {
    at::NoGradGuard no_grad;
    for (const auto& b : data.eval_batches()) before += model->loss(b.first, b.second).item<double>();
  }
  before /= double(data.eval_batches().size());
  EXPECT_NEAR(evaluate_batches(*model, from(data.eval_batches())).loss, before, 1e-6);
}

TEST(Evaluation, SpreadOverThreeThreadsItGivesEveryExamplesLossInOrderBitwiseAsOneThreadDoes) {
  Config cfg = tiny_config("single", 1);
  cfg.train.eval_batches = 7;  // not a multiple of the thread count
  DataSource data(cfg);
  std::vector<std::shared_ptr<Model>> models;
  for (int k = 0; k < 3; ++k) models.push_back(make_model(cfg.model, data.vocab_size(), 11));
  std::vector<double> alone, spread, serial;
  const EvalResult one = evaluate_batches_parallel({models[0].get()}, data.eval_batches(), &alone);
  const EvalResult three =
      evaluate_batches_parallel({models[0].get(), models[1].get(), models[2].get()}, data.eval_batches(), &spread);
  evaluate_batches(*models[0], from(data.eval_batches()), &serial);
  ASSERT_EQ(alone.size(), size_t(7 * cfg.train.batch_size));
  EXPECT_EQ(spread, alone);
  EXPECT_EQ(serial, alone) << "one thread is the plain evaluation";
  EXPECT_EQ(three.loss, one.loss);
  EXPECT_EQ(three.se, one.se);
  EXPECT_EQ(three.examples, 7 * cfg.train.batch_size);
  // More models than batches: the extra ones stay idle.
  std::vector<double> few;
  const std::vector<Batch> two(data.eval_batches().begin(), data.eval_batches().begin() + 2);
  evaluate_batches_parallel({models[0].get(), models[1].get(), models[2].get()}, two, &few);
  EXPECT_EQ(few, std::vector<double>(alone.begin(), alone.begin() + 2 * cfg.train.batch_size));
}

TEST(Evaluation, FullSplitCoversEveryNonOverlappingWindowExactlyOnceInOrder) {
  Config cfg = tiny_config("single", 1);
  const TokenData text = load_token_data(cfg.data.dir, cfg.data.vocab_size);
  const auto& tokens = text.val.tokens;
  const int64_t n = static_cast<int64_t>(tokens.size()), t = cfg.model.block_size;
  const int64_t windows = (n - 1) / t;  // a window needs T + 1 tokens (inputs and shifted targets)
  ASSERT_GT(windows, 10);
  DataSource data(cfg);
  EXPECT_EQ(data.full_eval_examples(), windows);
  // Read in batches of 7 (not a divisor): every token position once, in order.
  std::vector<int64_t> xs, ys;
  for (int64_t first = 0; first < windows; first += 7) {
    const Batch b = data.full_eval_batch(first, std::min<int64_t>(7, windows - first));
    ASSERT_EQ(b.first.size(1), t);
    const at::Tensor x = b.first.reshape({-1}).contiguous(), y = b.second.reshape({-1}).contiguous();
    xs.insert(xs.end(), x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.numel());
    ys.insert(ys.end(), y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + y.numel());
  }
  ASSERT_EQ(int64_t(xs.size()), windows * t);
  for (int64_t i = 0; i < windows * t; ++i) {
    ASSERT_EQ(xs[size_t(i)], tokens[size_t(i)]) << "input " << i;
    ASSERT_EQ(ys[size_t(i)], tokens[size_t(i + 1)]) << "target " << i;
  }
  EXPECT_LT(n - 1 - windows * t, t) << "another whole window would fit";
  EXPECT_THROW(data.full_eval_batch(windows - 1, 2), std::out_of_range);

  // A run's final evaluation covers them all; the earlier ones the sample.
  const RunSummary s = simulate(cfg);
  EXPECT_EQ(s.final_eval, "full");
  EXPECT_EQ(s.final_eval_examples, windows);
  EXPECT_EQ(s.final_eval_tokens, windows * t);
  EXPECT_GT(s.final_val_loss_se, 0);
  for (const auto& line : s.events) {
    const auto e = nlohmann::json::parse(line);
    if (e["event"] != "eval") continue;
    const bool last = e["step"] == cfg.train.steps;
    EXPECT_EQ(e["eval_split"], last ? "full" : "sample");
    EXPECT_EQ(e["eval_tokens"].get<int64_t>(), last ? windows * t : cfg.train.eval_batches * cfg.train.batch_size * t);
    EXPECT_GT(e["val_loss_se"].get<double>(), 0);
    if (last) {
      EXPECT_EQ(e["val_loss"].get<double>(), s.final_val_loss);
    }
  }
  // train.final_eval = "sample": the final evaluation is the sample too.
  cfg.train.final_eval = "sample";
  const RunSummary sampled = simulate(cfg);
  EXPECT_EQ(sampled.final_eval_examples, cfg.train.eval_batches * cfg.train.batch_size);
  EXPECT_NE(sampled.final_val_loss, s.final_val_loss);
}

// A classifier whose example i is correct when its input's second column is
// positive; its loss is the first column.
class SpyClassifier : public SpyModel {
 public:
  ExampleScores example_scores(const at::Tensor& x, const at::Tensor& y) override {
    return {example_losses(x, y), x.select(1, 1) > 0};
  }
};

TEST(Evaluation, AClassifiersAccuracyIsTheShareOfItsExamplesMarkedCorrectOverEveryBatch) {
  SpyClassifier model;
  const at::Tensor unused = at::zeros({3}, at::kLong);
  const std::vector<Batch> batches = {{at::tensor({1.0, 1.0, 2.0, -1.0, 3.0, 1.0}, at::kFloat).view({3, 2}), unused},
                                      {at::tensor({4.0, -1.0, 5.0, 1.0}, at::kFloat).view({2, 2}), unused}};
  const EvalResult r = evaluate_batches(model, from(batches));
  EXPECT_EQ(r.correct, 3);
  EXPECT_DOUBLE_EQ(r.accuracy, 0.6);
  EXPECT_DOUBLE_EQ(r.loss, 3.0);  // the losses as before
  // Spread over threads, the same count.
  SpyClassifier other;
  const EvalResult both = evaluate_batches_parallel({&model, &other}, batches);
  EXPECT_EQ(both.correct, 3);
  EXPECT_DOUBLE_EQ(both.accuracy, 0.6);
  // A model that is not a classifier has none.
  SpyModel plain;
  const EvalResult none = evaluate_batches_parallel({&plain}, batches);
  EXPECT_EQ(none.correct, -1);
  EXPECT_TRUE(std::isnan(none.accuracy));
  Config cfg = tiny_config("single", 1);
  DataSource data(cfg);
  auto gpt = make_model(cfg.model, data.vocab_size(), 7);
  EXPECT_TRUE(std::isnan(evaluate_batches(*gpt, from(data.eval_batches())).accuracy)) << "a language model";
}

TEST(Evaluation, TheMlpAndATorchScriptClassifierCallAnExampleCorrectWhenItsHighestLogitIsItsLabel) {
  testing::TempDir tmp;
  ModelConfig mc;
  mc.kind = "mlp";
  mc.mlp_hidden = 16;
  auto mlp = make_model(mc, 10, 5);
  const std::string path = tmp.path("mlp.pt");
  save_mlp_module(*mlp, path);
  ModelConfig tc;
  tc.kind = "torchscript";
  tc.path = path;
  tc.loss = "cross_entropy";
  auto scripted = make_model(tc, 10, 5);
  at::manual_seed(3);
  const at::Tensor x = at::rand({64, 1, 28, 28}), y = at::randint(0, 10, {64}, at::kLong);
  // The logits as PyTorch computes them, from the saved module itself.
  torch::jit::Module module = torch::jit::load(path);
  at::NoGradGuard no_grad;
  const at::Tensor want = module.forward({x}).toTensor().argmax(1).eq(y);
  ASSERT_GT(want.sum().item<int64_t>(), 0);
  ASSERT_LT(want.sum().item<int64_t>(), 64) << "some right and some wrong, or the test shows nothing";
  for (Model* m : {mlp.get(), scripted.get()}) {
    const Model::ExampleScores s = m->example_scores(x, y);
    ASSERT_TRUE(s.correct.defined());
    EXPECT_TRUE(at::equal(s.correct, want));
    EXPECT_TRUE(at::allclose(s.losses, m->example_losses(x, y)));
  }
}

TEST(Evaluation, FinalEvalSettingsAreValidated) {
  Config cfg = tiny_config("single", 1);
  cfg.train.final_eval = "all";
  cfg.train.eval_batch_size = 0;
  std::string all;
  for (const auto& e : validate(cfg)) all += e + "\n";
  EXPECT_NE(all.find("train.final_eval"), std::string::npos) << all;
  EXPECT_NE(all.find("train.eval_batch_size"), std::string::npos) << all;
}

}  // namespace
}  // namespace atl
