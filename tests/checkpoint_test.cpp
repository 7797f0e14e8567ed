// Checkpoint and resume: the file format, and a run stopped part-way and
// resumed matching the run that never stopped, bit for bit, per strategy.
#include <gtest/gtest.h>

#include <ATen/ops/full.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/train.h"
#include "every_strategy.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/checkpoint.h"
#include "train/checkpoint_file.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

// metrics.jsonl with the wall-clock fields removed: what must be identical
// (eval_s, final_eval_s: how long evaluations took).
std::vector<nlohmann::json> deterministic_events(const fs::path& dir) {
  static const std::vector<std::string> wall = {"elapsed_s",      "tokens_per_s", "model_flops_per_s",
                                                "correlation_ms", "wall_s",       "eta_s",
                                                "eval_s",         "final_eval_s", "startup_s"};
  std::vector<nlohmann::json> out;
  std::ifstream in(dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json e = nlohmann::json::parse(line);
    for (const auto& key : wall) e.erase(key);
    out.push_back(e);
  }
  return out;
}

// Every method of the table (testing::every_strategy()), and DiLoCo with
// every fault at once.
std::vector<std::string> resume_cases() {
  std::vector<std::string> cases = testing::every_strategy();
  cases.push_back("diloco_with_faults");
  cases.push_back("muloco");           // DiLoCo with Muon: its momentum kept across the stop
  cases.push_back("streaming_eager");  // both fragments' all-reduces and payloads in flight at the stop
  return cases;
}

// The per-method settings each case needs to have state in flight at the
// stop are here, and only here.
Config resume_config(const std::string& param, const std::string& out_dir) {
  const bool faults = param == "diloco_with_faults";
  const std::string strategy = faults || param == "muloco"  ? "diloco"
                               : param == "streaming_eager" ? "streaming"
                                                            : param;
  Config cfg = tiny_config(strategy, testing::workers_for(strategy, 3));
  if (param == "muloco") cfg.optim.name = "muon";
  if (param == "streaming_eager") {  // syncs after steps 1, 5, 9 (fragment 0) and 3, 7 (fragment 1)
    cfg.streaming.eager = true;
    cfg.streaming.overlap = 0;
  }
  cfg.run.out_dir = out_dir;
  cfg.train.steps = 24;
  cfg.train.log_every = 3;
  cfg.train.eval_every = 6;
  cfg.diloco.inner_steps = 4;
  cfg.network.compute_time = "flops";  // simulated time is then exact too
  cfg.network.jitter = "2ms";          // seeded per op: the op counter must resume
  cfg.sparta.p = 0.05;
  cfg.sparta.delay = 2;  // averages still in flight at the checkpoint
  cfg.streaming.fragment_blocks = 1;
  cfg.palsgd.inner_steps = 4;
  cfg.palsgd.ddp_warmup_steps = 2;
  cfg.noloco.inner_steps = 4;
  cfg.desloc.param_period = 4;  // moments averaged after steps 8 and 16 (first), 12 and 24 (second)
  cfg.desloc.first_moment_factor = 2;
  cfg.desloc.second_moment_factor = 3;
  cfg.strategy.correlation_every = 6;
  if (strategy == "streaming") cfg.model.n_layer = 2;  // two fragments, one in flight at the stop
  if (strategy == "ddp") {
    cfg.ddp.codec = "topk";  // error-feedback residual carried across the stop
    cfg.codec.topk_density = 0.1;
  }
  if (faults) {  // churn, lost and corrupt contributions, a robust aggregator, a straggler, an outage
    cfg.faults.absent = "1@6-14";
    cfg.faults.drop_prob = 0.3;
    cfg.faults.corrupt = "2@16-:nan";
    cfg.faults.speed_schedule = "9:0=2, 13:0=1";
    cfg.diloco.aggregator = "trimmed_mean";
    cfg.network.outages = "2@0.001s-0.002s";
  }
  return cfg;
}

class ResumeEquality : public ::testing::TestWithParam<std::string> {};

TEST_P(ResumeEquality, StoppedAndResumedRunMatchesTheUninterruptedRunBitwise) {
  testing::TempDir tmp;
  Config cfg = resume_config(GetParam(), tmp.str());
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);
  ASSERT_EQ(whole.stopped_at, -1);

  cfg.run.name = "resumed";
  cfg.run.stop_at = 10;  // mid-period for H = 4 and with delayed averages pending
  cfg.run.checkpoint_every = 4;
  const RunSummary first = train(cfg);
  ASSERT_EQ(first.stopped_at, 10);
  EXPECT_FALSE(fs::exists(tmp.path("resumed") + "/summary.json"));
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  const RunSummary second = train(cfg);
  ASSERT_EQ(second.stopped_at, -1);

  const auto a = deterministic_events(tmp.path("whole")), b = deterministic_events(tmp.path("resumed"));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "event " << i;
  const nlohmann::json end = a.back();
  ASSERT_EQ(end.at("event"), "end");
  EXPECT_EQ(end.at("params_hash_per_worker").size(), size_t(cfg.strategy.workers));
  EXPECT_EQ(whole.final_val_loss, second.final_val_loss);
  EXPECT_EQ(whole.sim_seconds, second.sim_seconds);
  EXPECT_EQ(whole.bytes_sent_per_worker, second.bytes_sent_per_worker);
  // Checkpoints every 4 steps (plus the stop at 10), the newest 3 kept.
  EXPECT_EQ(CheckpointStore(tmp.path("resumed")).steps(), (std::vector<int64_t>{20, 16, 12}));
}

INSTANTIATE_TEST_SUITE_P(EveryStrategy, ResumeEquality, ::testing::ValuesIn(resume_cases()), testing::method_test_name);

TEST(CheckpointFile, RoundTripsEveryKindOfRecord) {
  CheckpointRecords r;
  r["a.int"].kind = RecordKind::Integer;
  r["a.int"].integer = -7;
  r["b.real"].kind = RecordKind::Real;
  r["b.real"].real = 0.1;
  r["c.text"].kind = RecordKind::Text;
  r["c.text"].text = std::string("x\0y", 3);
  auto& t = r["d.tensor"];
  t.kind = RecordKind::Tensor;
  t.element = ElementType::Int16;
  t.shape = {2, 3};
  t.text = std::string(12, '\x05');
  const CheckpointRecords back = parse_checkpoint(serialize_checkpoint(r));
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back.at("a.int").integer, -7);
  EXPECT_EQ(back.at("b.real").real, 0.1);
  EXPECT_EQ(back.at("c.text").text, std::string("x\0y", 3));
  EXPECT_EQ(back.at("d.tensor").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.at("d.tensor").text, std::string(12, '\x05'));
}

TEST(CheckpointFile, EveryTruncationAndEveryFlippedByteIsAnErrorNotACrash) {
  CheckpointRecords r;
  r["x"].kind = RecordKind::Tensor;
  r["x"].shape = {4};
  r["x"].text = std::string(16, '\x01');
  r["n"].kind = RecordKind::Integer;
  const std::string good = serialize_checkpoint(r);
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_THROW(parse_checkpoint(good.substr(0, n)), CheckpointError) << "truncated to " << n;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    EXPECT_THROW(parse_checkpoint(bad), CheckpointError) << "byte " << i;
  }
  EXPECT_THROW(parse_checkpoint(good + "z"), CheckpointError);
}

TEST(CheckpointState, ACountTheFileCannotHoldIsRefusedBeforeAnythingIsSizedByIt) {
  std::vector<at::Tensor> saved = {at::full({2}, 1.0), at::full({3}, 2.0), at::full({1}, 3.0)};
  StateWriter writer;
  writer.tensors("list", saved);
  int64_t after = 5;
  writer.integer("after", after);
  // Through the file format, as a resume reads it.
  const CheckpointRecords good = parse_checkpoint(serialize_checkpoint(writer.records()));
  {
    StateReader reader(good, "good.ckpt");
    std::vector<at::Tensor> list;
    reader.tensors("list", list);
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[1].sum().item<double>(), 6.0);
  }
  // 2^39 entries (within the old limit of 2^40, which sized a list of 4 TiB
  // of tensor handles before any record backed it), more than the 121 bytes
  // of records left could hold (10 of at least 12 bytes), and a negative count.
  for (const int64_t count : {int64_t(1) << 39, int64_t(37), int64_t(-1)}) {
    CheckpointRecords bad = good;
    bad.at("list.count").integer = count;
    bad = parse_checkpoint(serialize_checkpoint(bad));
    StateReader reader(bad, "bad.ckpt");
    std::vector<at::Tensor> list;
    try {
      reader.tensors("list", list);
      ADD_FAILURE() << "count " << count << " was accepted";
    } catch (const CheckpointError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'list.count' is " + std::to_string(count)), std::string::npos) << what;
      EXPECT_NE(what.find("hold at most"), std::string::npos) << what;
    }
    EXPECT_TRUE(list.empty());
  }
}

}  // namespace
}  // namespace atl
