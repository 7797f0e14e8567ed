// atoll retime: a finished run replayed on another network equals a fresh
// run on that network, every figure but the wall-clock ones.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "atoll/retime.h"
#include "every_strategy.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/timing_files.h"
#include "util/file_io.h"

namespace atl {
namespace {

// Figures a run measures on the machine, not on the simulated clock.
bool is_wall_clock(const std::string& key) {
  static const char* wall[] = {"elapsed_s",
                               "tokens_per_s",
                               "model_flops_per_s",
                               "eval_s",
                               "final_eval_s",
                               "startup_s",
                               "wall_s",
                               "correlation_ms",
                               "comm_wall_s",
                               "compute_wall_s",
                               "comm_wall_s_per_worker",
                               "compute_wall_s_per_worker",
                               "threads_per_worker"};
  for (const char* w : wall)
    if (key == w) return true;
  return false;
}

// Every field of `a` equals `b`'s: numbers to 1e-9 relative.
void expect_same(const nlohmann::json& a, const nlohmann::json& b, const std::string& where) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    EXPECT_LE(std::abs(x - y), 1e-9 * std::max(std::abs(x), std::abs(y))) << where << ": " << x << " vs " << y;
    return;
  }
  ASSERT_EQ(a.type(), b.type()) << where << ": " << a.dump() << " vs " << b.dump();
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << where << ": " << a.dump() << " vs " << b.dump();
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (is_wall_clock(it.key())) continue;
      ASSERT_TRUE(b.contains(it.key())) << where << "." << it.key();
      expect_same(it.value(), b.at(it.key()), where + "." + it.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << where;
    for (size_t i = 0; i < a.size(); ++i) expect_same(a[i], b[i], where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

std::vector<nlohmann::json> jsonl(const std::string& path) {
  std::istringstream in(read_file_bytes(path));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

struct Case {
  std::string name;
  std::string strategy;
  int64_t workers;
  std::vector<std::string> settings;  // key=value on top of tiny_config
  std::vector<std::string> to;        // more of network B (retimable keys only)
};

// The tiny run, modelled clock, network A; `settings` on top.
Config case_config(const Case& c, const testing::TempDir& dir, const std::string& name) {
  Config cfg = tiny_config(c.strategy, c.workers);
  cfg.network.compute_time = "flops";
  cfg.run.out_dir = dir.str();
  cfg.run.name = name;
  std::vector<std::string> errors;
  apply_overrides(cfg, c.settings, errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  return cfg;
}

// Network A -> B: bandwidth, latency, algorithm (and islands' links).
const std::vector<std::string> kNetworkA = {"network.bandwidth=20Mbit/s", "network.latency=3ms"};
const std::vector<std::string> kNetworkB = {"network.bandwidth=1Gbit/s", "network.latency=40ms",
                                            "network.algorithm=tree"};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class RetimeEqualsRerun : public ::testing::TestWithParam<Case> {};

TEST_P(RetimeEqualsRerun, EveryFigureButTheWallClockMatchesAFreshRunOnTheNewNetwork) {
  const Case& c = GetParam();
  testing::TempDir dir;
  Config a = case_config(c, dir, "a");
  std::vector<std::string> errors;
  apply_overrides(a, kNetworkA, errors);
  Config b = case_config(c, dir, "b");
  std::vector<std::string> network_b = kNetworkB;
  network_b.insert(network_b.end(), c.to.begin(), c.to.end());
  apply_overrides(b, network_b, errors);
  ASSERT_TRUE(errors.empty());
  train(a);
  train(b);
  const RetimedRun retimed = retime_run(dir.path("a"), network_b);
  write_retimed_run(retimed, dir.path("a"), dir.path("a_on_b"), false);

  const auto fresh = jsonl(dir.path("b") + "/metrics.jsonl");
  const auto replayed = jsonl(dir.path("a_on_b") + "/metrics.jsonl");
  ASSERT_EQ(fresh.size(), replayed.size());
  for (size_t i = 0; i < fresh.size(); ++i) expect_same(replayed[i], fresh[i], "event " + std::to_string(i));
  // The clock really moved: network B's time differs from A's.
  const auto original = jsonl(dir.path("a") + "/metrics.jsonl");
  const double before = original.back().at("sim_time_s"), after = fresh.back().at("sim_time_s");
  if (c.workers > 1) {
    EXPECT_NE(before, after);
  }
  if (c.name == "diloco_outages") {  // the outage really delays an op, and is logged at the new time
    int outages = 0;
    for (const auto& e : fresh) outages += e.value("kind", "") == "outage";
    EXPECT_EQ(outages, 1);
  }
  // summary.json: the figures compare and report read.
  const auto summary_b = nlohmann::json::parse(read_file_bytes(dir.path("b") + "/summary.json"));
  const auto summary_r = nlohmann::json::parse(read_file_bytes(dir.path("a_on_b") + "/summary.json"));
  for (const char* key : {"sim_time_s", "compute_utilisation", "bytes_sent_per_worker", "final_val_loss"})
    expect_same(summary_r.at(key), summary_b.at(key), key);
}

// With measured compute a fresh run would measure other times, but the
// recorded ones replayed on the run's own network give back its clock.
TEST(Retime, AMeasuredRunRetimedToItsOwnNetworkGivesBackItsClock) {
  testing::TempDir dir;
  Config cfg = tiny_config("streaming", 2);
  cfg.network.compute_time = "measured";
  cfg.network.jitter = "2ms";
  cfg.network.speed_factors = "1,3";
  cfg.model.n_layer = 2;
  cfg.streaming.fragment_blocks = 1;
  cfg.diloco.inner_steps = 6;
  cfg.run.out_dir = dir.str();
  cfg.run.name = "m";
  train(cfg);
  const RetimedRun same = retime_run(dir.path("m"), {});
  write_retimed_run(same, dir.path("m"), dir.path("m_again"), false);
  const auto original = jsonl(dir.path("m") + "/metrics.jsonl");
  const auto replayed = jsonl(dir.path("m_again") + "/metrics.jsonl");
  ASSERT_EQ(original.size(), replayed.size());
  for (size_t i = 0; i < original.size(); ++i) expect_same(replayed[i], original[i], "event " + std::to_string(i));
}

// The scenarios each method's clock needs (overlap, delays, topologies,
// islands, outages), then every method of the table no scenario runs, at
// tiny_config's settings: a new method is retimed the day it lands.
std::vector<Case> retime_cases() {
  std::vector<Case> cases = {
      Case{"ddp_overlapped", "ddp", 3, {"ddp.overlap=true", "ddp.bucket_mb=0.005", "ddp.first_bucket_mb=0.002"}, {}},
      Case{"ddp_blocking", "ddp", 2, {"ddp.overlap=false"}, {}},
      Case{"localsgd_ring", "localsgd", 3, {"strategy.topology=ring"}, {}},
      Case{"diloco_stragglers_jitter", "diloco", 3, {"network.speed_factors=1,2.5,1", "network.jitter=4ms"}, {}},
      Case{"sparta_async_gossip", "sparta", 4, {"sparta.delay=2", "strategy.topology=gossip"}, {}},
      Case{"sparta_diloco", "sparta_diloco", 2, {}, {}},
      Case{"noloco", "noloco", 4, {"noloco.inner_steps=5"}, {}},
      Case{"palsgd", "palsgd", 2, {}, {}},
      Case{"demo", "demo", 3, {}, {}},
      Case{"desloc", "desloc", 3, {"desloc.param_period=4", "desloc.second_moment_factor=4"}, {}},
      Case{"streaming_async",
           "streaming",
           2,
           {"streaming.fragment_blocks=1", "model.n_layer=2", "streaming.overlap=2", "diloco.inner_steps=6"},
           {}},
      Case{"single", "single", 1, {}, {}},
      Case{"diloco_islands_leader", "diloco", 4, {"islands.devices=2", "islands.exchange=leader"}, {}},
      Case{"ddp_islands_to_sharded_shared_uplink",
           "ddp",
           4,
           {"islands.devices=2", "islands.exchange=leader"},
           {"islands.exchange=sharded", "network.island_uplink=shared", "network.intra_bandwidth=5Gbit/s",
            "network.intra_latency=1ms"}},
      Case{"diloco_outages", "diloco", 2, {"network.outages=1@0.001s-0.2s"}, {}},
  };
  for (const std::string& method : testing::every_strategy()) {
    bool named = false;
    for (const Case& c : cases) named = named || c.strategy == method;
    if (!named) cases.push_back(Case{method, method, testing::workers_for(method, 2), {}, {}});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Strategies, RetimeEqualsRerun, ::testing::ValuesIn(retime_cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace atl
