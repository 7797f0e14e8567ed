// model.kind = torchscript: a user's module trains as a built-in model does
// (same trajectory as the built-in MLP with the same weights), resumes
// bitwise, runs over Gloo as in the simulator, and refuses modules that
// break the contract with a message saying what to change.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "atoll/config.h"
#include "atoll/data.h"
#include "atoll/launch.h"
#include "atoll/model.h"
#include "atoll/run_model.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "every_strategy.h"
#include "model/torchscript.h"
#include "run_series.h"
#include "test_util.h"
#include "tiny_data.h"
#include "torchscript_modules.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

// 96 training and 40 validation "images" (float32 (N, 1, 28, 28)) whose
// labels are a fixed linear function of the pixels, so there is something
// to learn.
std::string image_npy_dir(const testing::TempDir& tmp) {
  const std::string dir = tmp.path("images");
  fs::create_directories(dir);
  at::manual_seed(11);
  const at::Tensor w = at::randn({784, 10});
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", 96}, {"val", 40}}) {
    const at::Tensor x = at::rand({n, 1, 28, 28});
    const at::Tensor y = (x.reshape({n, 784}) - 0.5).mm(w).argmax(1);
    write_npy(dir + "/" + split + "_inputs.npy", x);
    write_npy(dir + "/" + split + "_targets.npy", y);
  }
  return dir;
}

Config image_config(const std::string& dir, const std::string& strategy, const std::string& out) {
  Config cfg;
  cfg.data.dataset = "npy";
  cfg.data.dir = dir;
  cfg.model.kind = "mlp";
  cfg.model.mlp_hidden = 32;
  cfg.optim.warmup_steps = 2;
  cfg.train.steps = 20;
  cfg.train.batch_size = 8;
  cfg.train.eval_every = 5;
  cfg.train.eval_batches = 2;
  cfg.train.log_every = 1;
  cfg.strategy.name = strategy;
  cfg.strategy.workers = 2;
  cfg.diloco.inner_steps = 5;
  cfg.network.compute_time = "flops";
  cfg.run.progress = false;
  cfg.run.out_dir = out;
  cfg.run.name = strategy;
  return cfg;
}

TEST(TorchScriptModel, AnMlpWithTheBuiltInWeightsFollowsTheBuiltInMlpFor20Steps) {
  testing::TempDir tmp;
  const std::string data = image_npy_dir(tmp);
  for (const char* strategy : {"ddp", "diloco"}) {
    Config builtin = image_config(data, strategy, tmp.path("builtin"));
    // The module starts from the weights the built-in MLP draws from run.seed.
    auto mlp = make_model(builtin.model, 0, static_cast<uint64_t>(builtin.run.seed));
    const std::string module = tmp.path("mlp.pt");
    save_mlp_module(*mlp, module);
    Config scripted = image_config(data, strategy, tmp.path("scripted"));
    scripted.model.kind = "torchscript";
    scripted.model.path = module;
    scripted.model.flops_per_sample = mlp->flops_per_token();
    const RunSummary a = train(builtin), b = train(scripted);
    const auto la = series(a, "train", "loss"), lb = series(b, "train", "loss");
    ASSERT_EQ(la.size(), 20u) << strategy;
    ASSERT_EQ(lb.size(), la.size()) << strategy;
    for (size_t k = 0; k < la.size(); ++k) EXPECT_NEAR(lb[k], la[k], 1e-5) << strategy << " step " << k + 1;
    const auto va = series(a, "eval", "val_loss"), vb = series(b, "eval", "val_loss");
    ASSERT_EQ(va.size(), vb.size());
    for (size_t k = 0; k < va.size(); ++k) EXPECT_NEAR(vb[k], va[k], 1e-5) << strategy << " eval " << k;
    EXPECT_EQ(a.sim_seconds, b.sim_seconds) << strategy << ": the same modelled clock";
    EXPECT_EQ(a.bytes_sent_per_worker, b.bytes_sent_per_worker) << strategy;
  }
}

// atoll sample needs the tokenizer of a text data folder: classifier runs
// on npy images, built-in or TorchScript, are refused saying why.
TEST(TorchScriptModel, SamplingAClassifierRunIsRefusedSayingWhy) {
  testing::TempDir tmp;
  const std::string data = image_npy_dir(tmp);
  Config builtin = image_config(data, "single", tmp.str());
  builtin.strategy.workers = 1;
  builtin.train.steps = 5;
  builtin.run.name = "builtin";
  auto mlp = make_model(builtin.model, 0, static_cast<uint64_t>(builtin.run.seed));
  save_mlp_module(*mlp, tmp.path("mlp.pt"));
  Config scripted = builtin;
  scripted.model.kind = "torchscript";
  scripted.model.path = tmp.path("mlp.pt");
  scripted.run.name = "scripted";
  const RunSummary a = train(builtin), b = train(scripted);
  const std::string said_builtin = testing::invalid_argument_message([&] { sample_run(a.run_dir, {}); });
  EXPECT_NE(said_builtin.find("built-in 'mlp' image classifier"), std::string::npos) << said_builtin;
  const std::string said_scripted = testing::invalid_argument_message([&] { sample_run(b.run_dir, {}); });
  EXPECT_NE(said_scripted.find("data.dataset = npy, which has none"), std::string::npos) << said_scripted;
}

// A TorchScript language model on the tiny text.
Config token_config(const testing::TempDir& tmp, const std::string& strategy, const TokenModuleOptions& m = {}) {
  Config cfg = tiny_config(strategy, 3);
  TokenModuleOptions o = m;
  o.vocab = load_token_data(tiny_text_dir()).vocab_size;
  const std::string path = tmp.path("token_" + std::to_string(o.tied) + std::to_string(o.own_loss) + ".pt");
  if (!fs::exists(path)) save_token_module(path, o);
  cfg.model.kind = "torchscript";
  cfg.model.path = path;
  cfg.model.flops_per_sample = 0;  // counted when the run starts (every run below, resumes and ranks included)
  cfg.network.compute_time = "flops";
  cfg.run.out_dir = tmp.str();
  return cfg;
}

TEST(TorchScriptModel, EveryStrategyTrainsAModuleAndItsLossFalls) {
  testing::TempDir tmp;
  // Every method of the strategy table (a list here would miss a new one).
  for (const std::string& name : testing::every_strategy()) {
    const char* strategy = name.c_str();
    Config cfg = token_config(tmp, strategy);
    cfg.run.name = strategy;
    cfg.strategy.workers = testing::workers_for(name, 3);
    cfg.optim.lr = 3e-2;
    cfg.sparta.p = 0.1;
    cfg.palsgd.inner_steps = 5;
    cfg.palsgd.ddp_warmup_steps = 2;
    cfg.noloco.inner_steps = 5;
    // No block names: each of the 3 tensors is a block, so 3 fragments and H a multiple of 3.
    cfg.streaming.fragment_blocks = 1;
    cfg.diloco.inner_steps = std::string(strategy) == "streaming" ? 6 : 5;
    const RunSummary s = train(cfg);
    const auto v = series(s, "eval", "val_loss");
    ASSERT_GE(v.size(), 2u) << strategy;
    EXPECT_LT(v.back(), v.front()) << strategy;
  }
}

TEST(TorchScriptModel, TiedParametersTrainAsOneAndExportUnderBothNames) {
  testing::TempDir tmp;
  TokenModuleOptions o;
  o.tied = true;
  Config cfg = token_config(tmp, "diloco", o);
  auto model = make_model(cfg.model, 0, 1, 16);
  // wte.weight, head.weight (tied) and head.bias: two parameters and an alias.
  EXPECT_EQ(model->parameters().size(), 2u);
  ASSERT_EQ(model->parameter_aliases().size(), 1u);
  EXPECT_EQ(model->parameter_aliases()[0], std::make_pair(std::string("head.weight"), std::string("wte.weight")));
  // The embedding receives the head's gradient too: one tensor, both uses.
  // Inputs use tokens 0-3 only, so the rows of the others get gradient
  // through the head alone.
  const at::Tensor x = at::randint(0, 4, {2, 16}, at::kLong), y = at::randint(0, 4, {2, 16}, at::kLong);
  model->loss(x, y).backward();
  const at::Tensor grad = model->named_parameters()["wte.weight"].grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad.narrow(0, 4, grad.size(0) - 4).abs().sum().item<double>(), 0);
  cfg.run.name = "tied";
  const RunSummary s = train(cfg);
  EXPECT_TRUE(fs::exists(fs::path(s.run_dir) / "model.safetensors"));
}

TEST(TorchScriptModel, AModuleThatComputesItsOwnLossIsScoredByIt) {
  testing::TempDir tmp;
  for (bool per_example : {true, false}) {
    TokenModuleOptions own;
    own.own_loss = true;
    own.with_example_losses = per_example;
    TokenModuleOptions plain;
    Config a = token_config(tmp, "single", own), b = token_config(tmp, "single", plain);
    if (!per_example) {
      a.model.path = tmp.path("own_no_examples.pt");
      own.vocab = load_token_data(tiny_text_dir()).vocab_size;
      save_token_module(a.model.path, own);
    }
    auto ma = make_model(a.model, 0, 1, 16), mb = make_model(b.model, 0, 1, 16);
    const int64_t v = load_token_data(tiny_text_dir()).vocab_size;
    const at::Tensor x = at::randint(0, v, {3, 16}, at::kLong), y = at::randint(0, v, {3, 16}, at::kLong);
    // Same weights (same seed), so the module's loss equals cross-entropy of its logits.
    EXPECT_NEAR(ma->loss(x, y).item<double>(), mb->loss(x, y).item<double>(), 1e-5);
    const at::Tensor ea = ma->example_losses(x, y), eb = mb->example_losses(x, y);
    ASSERT_EQ(ea.sizes(), eb.sizes());
    EXPECT_TRUE(at::allclose(ea, eb, 1e-5, 1e-5)) << "per_example method: " << per_example;
  }
}

// Stopped and resumed, a TorchScript run equals the uninterrupted run bitwise.
TEST(TorchScriptModel, AStoppedAndResumedRunMatchesTheUninterruptedRunBitwise) {
  testing::TempDir tmp;
  Config cfg = token_config(tmp, "diloco");
  cfg.train.steps = 24;
  cfg.diloco.inner_steps = 4;
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);
  cfg.run.name = "resumed";
  cfg.run.stop_at = 10;
  cfg.run.checkpoint_every = 4;
  ASSERT_EQ(train(cfg).stopped_at, 10);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  const RunSummary resumed = train(cfg);
  EXPECT_EQ(series(whole, "train", "loss"), series(resumed, "train", "loss"));
  EXPECT_EQ(whole.final_val_loss, resumed.final_val_loss);
  EXPECT_EQ(testing::read_text(fs::path(whole.run_dir) / "model.safetensors"),
            testing::read_text(fs::path(resumed.run_dir) / "model.safetensors"));
}

TEST(TorchScriptModel, AResumeWithAChangedModuleFileIsRefused) {
  testing::TempDir tmp;
  Config cfg = token_config(tmp, "diloco");
  cfg.run.name = "run";
  cfg.run.stop_at = 10;
  cfg.run.checkpoint_every = 5;
  train(cfg);
  TokenModuleOptions other;
  other.seed = 99;
  other.vocab = load_token_data(tiny_text_dir()).vocab_size;
  save_token_module(cfg.model.path, other);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  try {
    train(cfg);
    FAIL() << "resumed with another module";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the module the run started with"), std::string::npos)
        << e.what();
  }
}

// LibTorch's graph executor profiles a module's first calls and then
// switches to an optimised plan whose autodiff subgraphs use the JIT's own
// backward formulas (matmul's gradient through a folded, transposed
// product rather than autograd's mm backward). A module loaded afresh (a
// resumed run, a real rank) would then run autograd's formulas at steps
// where the uninterrupted run ran the JIT's; OpenBLAS's AVX2 kernels round
// the two differently in the last bit (issue 34, Zen 5 with
// OPENBLAS_CORETYPE=Haswell). atoll runs every module's graph as written on
// every thread that calls it (LibTorch's switch is per thread). Checked on
// the graphs the calls ran, so this fails without the fix on any CPU,
// whether or not its kernels round the two plans differently.
TEST(TorchScriptModel, EveryThreadRunsTheModulesGraphAsWrittenOnEveryCall) {
  testing::TempDir tmp;
  const Config cfg = token_config(tmp, "single");
  auto model = make_model(cfg.model, 0, 1, 16);
  const int64_t v = load_token_data(tiny_text_dir()).vocab_size;
  at::manual_seed(5);
  const at::Tensor x = at::randint(0, v, {4, 16}, at::kLong), y = at::randint(0, v, {4, 16}, at::kLong);
  auto calls = [&](std::vector<std::string>& graphs, std::vector<at::Tensor>& grads) {
    for (int k = 0; k < 5; ++k) {
      for (auto& p : model->parameters())
        if (p.grad().defined()) p.mutable_grad().zero_();
      model->loss(x, y).backward();
      const auto graph = torch::jit::lastExecutedOptimizedGraph();
      graphs.push_back(graph ? graph->toString() : "(none)");
      std::vector<at::Tensor> flat;
      for (const auto& p : model->parameters()) flat.push_back(p.grad().reshape({-1}).clone());
      grads.push_back(at::cat(flat));
    }
  };
  std::vector<std::string> graphs;
  std::vector<at::Tensor> grads;
  std::thread worker(calls, std::ref(graphs), std::ref(grads));  // as a simulated worker does
  worker.join();
  calls(graphs, grads);  // and on the thread that loaded the module
  ASSERT_EQ(graphs.size(), 10u);
  for (size_t k = 0; k < graphs.size(); ++k) {
    SCOPED_TRACE("call " + std::to_string(k % 5 + 1) + (k < 5 ? " on a worker thread" : " on the loading thread"));
    EXPECT_NE(graphs[k], "(none)");
    // Profiling, the optimised plan's guards and subgraphs, and the JIT's
    // autodiff backward (whose graph is the last one a backward runs).
    for (const char* node : {"prim::profile", "prim::DifferentiableGraph", "prim::RequiresGradCheck", "prim::TypeCheck",
                             "prim::AutogradAllZero", "aten::_grad_sum_to_size"})
      EXPECT_EQ(graphs[k].find(node), std::string::npos) << node << " in the graph run:\n" << graphs[k];
    EXPECT_TRUE(at::equal(grads[k], grads[0])) << "the gradient changed from the first call's";
  }
}

// N = 2 over Gloo reproduces the simulator bitwise, as for built-in models.
TEST(TorchScriptModel, TwoRanksOverGlooMatchTheSimulatorBitwise) {
  testing::TempDir tmp;
  Config cfg = token_config(tmp, "diloco");
  cfg.strategy.workers = 2;
  cfg.train.steps = 12;
  cfg.diloco.inner_steps = 4;
  cfg.run.name = "sim";
  cfg.run.divergence_check = "on";  // as the real run does by default: its all-gathers in both ledgers
  const RunSummary sim = train(cfg);
  LaunchOptions opts;
  opts.nproc = 2;
  opts.grace_seconds = 2;
  opts.argv = {testing::kAtoll, "train", "--dist-timeout=60"};
  const std::string toml = tmp.write("real.toml", to_toml(cfg));
  opts.argv.push_back(toml);
  opts.argv.push_back("--run.name=real");
  std::ostringstream out, err;
  opts.out = &out;
  opts.err = &err;
  const LaunchResult r = launch_local(opts);
  ASSERT_EQ(r.exit_code, 0) << r.error << "\n" << err.str();
  std::vector<nlohmann::json> real;
  std::ifstream in(tmp.path("real") + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) real.push_back(nlohmann::json::parse(line));
  const auto want = events_of(sim);
  ASSERT_EQ(real.size(), want.size());
  int compared = 0;
  for (size_t k = 0; k < want.size(); ++k)
    for (const char* key : {"loss", "val_loss", "bytes_sent_per_worker", "params_hash_per_worker"}) {
      if (!want[k].contains(key)) continue;
      EXPECT_EQ(real[k][key], want[k][key]) << "event " << k << " " << key;
      ++compared;
    }
  EXPECT_GT(compared, 8);
  EXPECT_EQ(testing::read_text(tmp.path("real") + "/model.safetensors"),
            testing::read_text(sim.run_dir + "/model.safetensors"));
}

// A module that breaks the contract is refused when the model is built,
// with what to change.
TEST(TorchScriptModel, ModulesThatBreakTheContractAreRefusedWithWhatToChange) {
  testing::TempDir tmp;
  auto module_with = [&](const std::string& name, const std::string& src, at::ScalarType dtype = at::kFloat,
                         const std::string& param = "w") {
    torch::jit::Module m("__torch__." + name);
    m.register_parameter(param, at::ones({4, 4}, dtype), false);
    m.define(src);
    const std::string path = tmp.path(name + ".pt");
    m.save(path);
    return path;
  };
  struct Case {
    std::string path, loss, expect;
  };
  std::vector<Case> cases = {
      {tmp.path("missing.pt"), "auto", "is not a file"},
      {tmp.write("garbage.pt", "not a zip file at all"), "auto", "not an intact zip archive"},
      {module_with("NoForward", "def other(self, x):\n    return x\n"), "auto", "has no forward method"},
      {module_with("ThreeArgs", "def forward(self, x, y, z):\n    return x\n"), "auto", "forward takes 3 arguments"},
      {module_with("OwnLoss", "def forward(self, x, y):\n    return (x * self.w.sum()).mean()\n"), "mse",
       "computes its own loss"},
      {module_with("Double", "def forward(self, x):\n    return x\n", at::kDouble), "auto", "float32"},
  };
  // A damaged copy of a good module (one byte of its compressed code
  // changed) fails the archive's CRC-32 before LibTorch reads it: a file
  // the fuzzer damaged this way once made LibTorch allocate 20 GB.
  const std::string good = module_with("Good", "def forward(self, x):\n    return torch.matmul(x, self.w)\n");
  std::string damaged = testing::read_text(good);
  const size_t code = damaged.find("code/__torch__.py");
  ASSERT_NE(code, std::string::npos);
  damaged[code + 60] = static_cast<char>(damaged[code + 60] ^ 0x20);
  cases.push_back({tmp.write("damaged.pt", damaged), "auto", "not an intact zip archive"});
  for (const auto& c : cases) {
    ModelConfig mc;
    mc.kind = "torchscript";
    mc.path = c.path;
    mc.loss = c.loss;
    try {
      make_model(mc, 0, 1);
      ADD_FAILURE() << c.path << " was accepted";
    } catch (const TorchScriptError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
    }
  }
  // BatchNorm's running statistics are state no strategy would synchronise.
  torch::jit::Module bn("__torch__.Bn");
  bn.register_parameter("weight", at::ones({4}), false);
  bn.register_buffer("running_mean", at::zeros({4}));
  bn.define("def forward(self, x):\n    return x * self.weight\n");
  bn.save(tmp.path("bn.pt"));
  ModelConfig mc;
  mc.kind = "torchscript";
  mc.path = tmp.path("bn.pt");
  try {
    make_model(mc, 0, 1);
    ADD_FAILURE() << "BatchNorm statistics accepted";
  } catch (const TorchScriptError& e) {
    EXPECT_NE(std::string(e.what()).find("running statistic"), std::string::npos) << e.what();
  }
  // Outputs that do not fit model.loss are refused at the first step.
  torch::jit::Module wrong("__torch__.Wrong");
  wrong.register_parameter("w", at::ones({3}), false);
  wrong.define("def forward(self, x):\n    return x.float().sum(1) * self.w.sum()\n");
  wrong.save(tmp.path("wrong.pt"));
  mc.path = tmp.path("wrong.pt");
  auto m = make_model(mc, 0, 1);
  try {
    m->loss(at::zeros({2, 5}, at::kLong), at::zeros({2, 5}, at::kLong));
    ADD_FAILURE() << "1-d outputs scored as logits";
  } catch (const TorchScriptError& e) {
    EXPECT_NE(std::string(e.what()).find("logits of shape (B, ..., classes)"), std::string::npos) << e.what();
  }
}

// The modelled clock's FLOPs are counted, so the config needs no
// model.flops_per_sample; a module in which the count finds no product
// would be charged no compute, and is refused when the run starts.
TEST(TorchScriptModel, AModuleWithoutCountableProductsIsRefusedOnTheModelledClockOnly) {
  testing::TempDir tmp;
  const int64_t v = load_token_data(tiny_text_dir()).vocab_size;
  torch::jit::Module m("__torch__.Lookup");  // logits looked up, never multiplied
  m.register_parameter("table", at::zeros({v, v}), false);
  m.define("def forward(self, x):\n    return torch.embedding(self.table, x)\n");
  m.save(tmp.path("lookup.pt"));
  Config cfg = token_config(tmp, "single");
  cfg.model.path = tmp.path("lookup.pt");
  cfg.strategy.workers = 1;
  cfg.train.steps = 2;
  cfg.run.name = "flops";
  EXPECT_TRUE(validate(cfg).empty()) << validate(cfg).front();
  const std::string said = testing::invalid_argument_message([&] { train(cfg); });
  EXPECT_NE(said.find("no matrix product, convolution or attention"), std::string::npos) << said;
  EXPECT_NE(said.find("model.flops_per_sample"), std::string::npos) << said;
  cfg.run.name = "measured";
  cfg.network.compute_time = "measured";
  EXPECT_EQ(train(cfg).steps, 2);
  cfg.run.name = "given";
  cfg.network.compute_time = "flops";
  cfg.model.flops_per_sample = 1e6;
  EXPECT_EQ(train(cfg).steps, 2);
}

// Counting is one forward pass of the evaluation model, without autograd,
// with the random state put back: a run whose FLOPs are counted is the run
// given the same figure by hand, bitwise, and its clock charges that figure.
TEST(TorchScriptModel, ARunWithCountedFlopsEqualsTheRunGivenTheCountBitwise) {
  testing::TempDir tmp;
  Config cfg = token_config(tmp, "diloco");
  cfg.run.name = "counted";
  const RunSummary counted = train(cfg);
  const nlohmann::json start = events_of(counted).front();
  ASSERT_EQ(start.at("event"), "start");
  EXPECT_EQ(start.at("flops_source"), "counted");
  // The head's (B, T, dim) x (dim, V) product is the module's one product:
  // 2 x T x dim x V in the forward pass, 3 times that to train.
  const TokenModuleOptions o;
  const double v = double(load_token_data(tiny_text_dir()).vocab_size);
  const double per_example = 3.0 * 2.0 * double(cfg.model.block_size * o.dim) * v;
  EXPECT_EQ(start.at("flops_per_example").get<double>(), per_example);
  EXPECT_EQ(start.at("flops_per_token").get<double>(), per_example / double(cfg.model.block_size));
  cfg.run.name = "given";
  cfg.model.flops_per_sample = per_example;
  const RunSummary given = train(cfg);
  EXPECT_EQ(events_of(given).front().at("flops_source"), "model.flops_per_sample");
  EXPECT_EQ(series(counted, "train", "loss"), series(given, "train", "loss"));
  EXPECT_EQ(counted.final_val_loss, given.final_val_loss);
  EXPECT_EQ(counted.sim_seconds, given.sim_seconds);
  EXPECT_EQ(testing::read_text(fs::path(counted.run_dir) / "model.safetensors"),
            testing::read_text(fs::path(given.run_dir) / "model.safetensors"));
}

TEST(TorchScriptModel, ReinitDrawsMatricesFromTheSeedAndKeepsVectors) {
  testing::TempDir tmp;
  Config cfg = token_config(tmp, "single");
  auto saved = make_model(cfg.model, 0, 1, 16);
  cfg.model.reinit = true;
  auto a = make_model(cfg.model, 0, 7, 16), b = make_model(cfg.model, 0, 7, 16), c = make_model(cfg.model, 0, 8, 16);
  for (const auto& item : saved->named_parameters()) {
    const at::Tensor& s = item.value();
    const at::Tensor ta = a->named_parameters()[item.key()], tb = b->named_parameters()[item.key()],
                     tc = c->named_parameters()[item.key()];
    EXPECT_TRUE(at::equal(ta, tb)) << item.key() << ": same seed, same draw";
    if (s.dim() >= 2) {
      EXPECT_FALSE(at::equal(ta, s)) << item.key();
      EXPECT_FALSE(at::equal(ta, tc)) << item.key();
      EXPECT_LE(ta.abs().max().item<double>(), 1.0 / std::sqrt(double(s.size(1))) + 1e-7) << item.key();
    } else {
      EXPECT_TRUE(at::equal(ta, s)) << item.key() << ": vectors keep their saved values";
    }
  }
}

}  // namespace
}  // namespace atl
