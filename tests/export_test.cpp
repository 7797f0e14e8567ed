// A finished run's model leaves atoll: the run folder keeps the weights its
// final evaluation judged, `atoll export` writes them for PyTorch, and
// `atoll sample` generates text from a GPT run.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>

#include "atoll/retime.h"
#include "atoll/run_model.h"
#include "atoll/train.h"
#include "model/export.h"
#include "model/gpt_names.h"
#include "model/safetensors.h"
#include "model/sample.h"
#include "model/torchscript.h"
#include "test_util.h"
#include "tiny_data.h"
#include "torchscript_modules.h"
#include "train/data_source.h"
#include "train/evaluation.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

RunSummary tiny_run(const testing::TempDir& tmp, const std::string& strategy, const std::string& name) {
  Config cfg = tiny_config(strategy, 2);
  cfg.run.out_dir = tmp.str();
  cfg.run.name = name;
  return train(cfg);
}

// The kept weights are the evaluated model: evaluating them again over the
// whole validation split gives the run's final loss.
TEST(RunModel, TheKeptWeightsAreTheModelTheFinalEvaluationJudged) {
  testing::TempDir tmp;
  for (const char* strategy : {"diloco", "ddp"}) {  // θ_g, and the workers' average
    const RunSummary s = tiny_run(tmp, strategy, strategy);
    const RunModel run = load_run_model(s.run_dir);
    const DataSource data(run.cfg);
    int64_t next = 0;
    const EvalResult r = evaluate_batches(*run.model, [&](Batch& b) {
      if (next >= data.full_eval_examples()) return false;
      const int64_t n = std::min<int64_t>(run.cfg.train.eval_batch_size, data.full_eval_examples() - next);
      b = data.full_eval_batch(next, n);
      next += n;
      return true;
    });
    EXPECT_NEAR(r.loss, s.final_val_loss, 1e-6) << strategy;
    const SafetensorsFile f = read_safetensors(run.weights_path);
    EXPECT_EQ(f.metadata.at("atoll.eval_model"), std::string(strategy) == "diloco" ? "global" : "average");
    EXPECT_EQ(f.metadata.at("atoll.steps"), "20");
  }
}

TEST(RunModel, TheBuiltInGptExportsUnderNanoGptNamesWithTheHeadTiedToTheEmbedding) {
  testing::TempDir tmp;
  const RunSummary s = tiny_run(tmp, "diloco", "run");
  const std::string out = tmp.path("model.safetensors");
  EXPECT_NE(export_run(s.run_dir, out, {}).find("nanoGPT's names"), std::string::npos);
  const SafetensorsFile f = read_safetensors(out);
  std::map<std::string, at::Tensor> by_name;
  for (const auto& t : f.tensors) by_name[t.name] = t.tensor;
  ASSERT_TRUE(by_name.count("transformer.wte.weight"));
  ASSERT_TRUE(by_name.count("lm_head.weight"));
  EXPECT_TRUE(at::equal(by_name["lm_head.weight"], by_name["transformer.wte.weight"]));
  EXPECT_TRUE(by_name.count("transformer.h.0.attn.c_attn.weight"));
  EXPECT_TRUE(by_name.count("transformer.h.0.mlp.c_proj.weight"));
  // Every tensor is the run's model's, under its nanoGPT name.
  const RunModel run = load_run_model(s.run_dir);
  for (auto& item : run.model->named_parameters())
    EXPECT_TRUE(at::equal(by_name.at(nanogpt_name(item.key())), item.value())) << item.key();
  // The output is never replaced by accident, and formats are checked.
  EXPECT_THROW(export_run(s.run_dir, out, {}), std::runtime_error);
  ExportOptions o;
  o.overwrite = true;
  o.format = "onnx";
  EXPECT_THROW(export_run(s.run_dir, out, o), std::invalid_argument);
  o.format = "torchscript";
  EXPECT_THROW(export_run(s.run_dir, out, o), std::invalid_argument);  // a built-in model has no module file
}

TEST(RunModel, ARetimedRunKeepsTheModelItsRunTrained) {
  testing::TempDir tmp;
  const RunSummary s = tiny_run(tmp, "diloco", "run");
  write_retimed_run(retime_run(s.run_dir, {"network.bandwidth=1Mbit/s"}), s.run_dir, tmp.path("slow"), false);
  EXPECT_EQ(testing::read_text(tmp.path("slow") + "/model.safetensors"),
            testing::read_text(s.run_dir + "/model.safetensors"));
  EXPECT_NO_THROW(load_run_model(tmp.path("slow")));
}

TEST(RunModel, UnfinishedRunsAndDamagedWeightsAreRefusedSayingWhy) {
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "stopped";
  cfg.run.stop_at = 10;
  train(cfg);
  try {
    load_run_model(tmp.path("stopped"));
    FAIL() << "an unfinished run exported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has not finished"), std::string::npos) << e.what();
  }
  const RunSummary s = tiny_run(tmp, "diloco", "damaged");
  const std::string weights = s.run_dir + "/model.safetensors";
  std::string bytes = testing::read_text(weights);
  tmp.write("damaged/model.safetensors", bytes.substr(0, bytes.size() - 5));
  EXPECT_THROW(load_run_model(s.run_dir), SafetensorsError);
  EXPECT_THROW(load_run_model(tmp.path("nothing")), std::runtime_error);
}

TEST(Sample, TheSameSeedGivesTheSameTextAndTemperatureZeroTheMostLikelyTokens) {
  testing::TempDir tmp;
  const RunSummary s = tiny_run(tmp, "ddp", "run");
  TextSampleOptions o;
  o.prompt = "the ";
  o.tokens = 40;
  const std::string a = sample_run(s.run_dir, o), b = sample_run(s.run_dir, o);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.substr(0, 4), "the ");
  EXPECT_EQ(a.size(), 44u);  // one byte per character in this vocabulary
  o.seed = 2;
  EXPECT_NE(sample_run(s.run_dir, o), a);
  // Greedy decoding follows the model's argmax at every position.
  const RunModel run = load_run_model(s.run_dir);
  SampleOptions greedy;
  greedy.tokens = 10;
  greedy.temperature = 0;
  greedy.block_size = run.cfg.model.block_size;
  const std::vector<int32_t> ids = sample_tokens(*run.model, {1, 2, 3}, greedy);
  ASSERT_EQ(ids.size(), 13u);
  at::NoGradGuard no_grad;
  for (size_t k = 3; k < ids.size(); ++k) {
    const int64_t from = std::max<int64_t>(0, int64_t(k) - greedy.block_size);
    at::Tensor x = at::empty({1, int64_t(k) - from}, at::kLong);
    for (int64_t i = from; i < int64_t(k); ++i) x.data_ptr<int64_t>()[i - from] = ids[size_t(i)];
    EXPECT_EQ(run.model->next_token_logits(x).select(1, x.size(1) - 1).argmax().item<int64_t>(), ids[k]) << k;
  }
  // Top-k = 1 is greedy whatever the temperature.
  SampleOptions top1 = greedy;
  top1.temperature = 1.5;
  top1.top_k = 1;
  EXPECT_EQ(sample_tokens(*run.model, {1, 2, 3}, top1), ids);
  o.prompt = "\xe2\x82\xac";  // a character the vocabulary lacks
  EXPECT_THROW(sample_run(s.run_dir, o), std::invalid_argument);
}

// A TorchScript module whose forward(inputs) gives logits (B, T, V)
// samples as the built-in GPT does, with the run's tokenizer.
TEST(Sample, ATorchScriptLanguageModelSamplesTextWithTheRunsTokenizer) {
  testing::TempDir tmp;
  Config cfg = tiny_config("single", 1);
  TokenModuleOptions o;
  o.vocab = load_token_data(tiny_text_dir()).vocab_size;
  cfg.model.kind = "torchscript";
  cfg.model.path = tmp.path("lm.pt");
  save_token_module(cfg.model.path, o);
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "lm";
  const RunSummary s = train(cfg);
  TextSampleOptions opts;
  opts.prompt = "the ";
  opts.tokens = 30;
  const std::string a = sample_run(s.run_dir, opts);
  EXPECT_EQ(a, sample_run(s.run_dir, opts));
  EXPECT_EQ(a.substr(0, 4), "the ");
  EXPECT_EQ(a.size(), 34u);  // one byte per character in this vocabulary
  opts.seed = 2;
  EXPECT_NE(sample_run(s.run_dir, opts), a);
  // The logits sampled from are the trained module's: their cross-entropy
  // is the loss the model reports for the same tokens.
  const RunModel run = load_run_model(s.run_dir);
  at::NoGradGuard no_grad;
  const at::Tensor x = at::randint(o.vocab, {2, 16}, at::kLong), y = at::randint(o.vocab, {2, 16}, at::kLong);
  const at::Tensor logits = run.model->next_token_logits(x);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{2, 16, o.vocab}));
  EXPECT_EQ(at::cross_entropy_loss(logits.reshape({-1, o.vocab}), y.reshape({-1})).item<double>(),
            run.model->loss(x, y).item<double>());
  // Greedy decoding takes their argmax at the last position.
  SampleOptions greedy;
  greedy.temperature = 0;
  greedy.tokens = 1;
  greedy.block_size = cfg.model.block_size;
  const std::vector<int32_t> ids = sample_tokens(*run.model, {1, 2, 3}, greedy);
  const at::Tensor prompt = at::tensor(std::vector<int64_t>{1, 2, 3}).view({1, 3});
  EXPECT_EQ(ids.back(), run.model->next_token_logits(prompt).select(1, 2).argmax().item<int64_t>());
}

// Modules that give no logits over a vocabulary per position are refused
// naming what atoll sample needs, not with LibTorch's shape error.
TEST(Sample, TorchScriptModulesThatAreNotLanguageModelsAreRefusedSayingWhy) {
  testing::TempDir tmp;
  ModelConfig cfg;
  cfg.kind = "torchscript";
  torch::jit::Module classifier("__torch__.TokenClassifier");  // a sentence's class from its tokens: (B, 3)
  classifier.register_parameter("emb", at::randn({16, 8}), false);
  classifier.register_parameter("head", at::randn({8, 3}), false);
  classifier.define(R"(
def forward(self, x):
    return torch.matmul(torch.embedding(self.emb, x).mean(1), self.head)
)");
  classifier.save(tmp.path("classifier.pt"));
  TokenModuleOptions own;
  own.own_loss = true;
  save_token_module(tmp.path("own_loss.pt"), own);
  const at::Tensor x = at::randint(16, {1, 5}, at::kLong);
  for (const auto& [file, expect] : std::vector<std::pair<std::string, std::string>>{
           {"classifier.pt", "is not a language model: forward(inputs) of token ids [1, 5] Long returned [1, 3] Float"},
           {"own_loss.pt", "this module's forward(inputs, targets) returns its loss"}}) {
    cfg.path = tmp.path(file);
    auto model = make_model(cfg, 0, 1);
    try {
      model->next_token_logits(x);
      ADD_FAILURE() << file << " gave logits";
    } catch (const TorchScriptError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("atoll sample needs"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace atl
