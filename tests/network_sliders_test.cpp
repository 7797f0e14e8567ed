// The HTML report's what-if network sliders (src/report/network_sliders.*):
// what the page embeds and where the sliders start. The page's script is
// checked in a browser (tests/browser, ctest label "browser").
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "atoll/report.h"
#include "atoll/retime.h"
#include "atoll/train.h"
#include "atoll/whatif.h"
#include "report/groups.h"
#include "report/network_sliders.h"
#include "test_util.h"
#include "tiny_data.h"
#include "util/format.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Two finished tiny runs with timing traces (DDP and DiLoCo, 2 workers, on
// the default 1 Gbit/s, 0 ms network).
struct TracedRuns {
  TempDir dir;
  std::string ddp, diloco;
  TracedRuns() {
    for (const char* strategy : {"ddp", "diloco"}) {
      Config cfg = tiny_config(strategy, 2);
      cfg.train.steps = 8;
      cfg.train.batch_size = 2;
      cfg.train.eval_every = 4;
      cfg.train.eval_batches = 1;
      cfg.diloco.inner_steps = 4;
      cfg.run.out_dir = dir.str();
      cfg.run.name = strategy;
      train(cfg);
    }
    ddp = dir.path("ddp");
    diloco = dir.path("diloco");
  }
};

const TracedRuns& traced() {
  static const TracedRuns r;
  return r;
}

// The JSON the page's script reads (#atoll-network), or null.
nlohmann::json network_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"atoll-network\">";
  const auto at = html.find(open);
  if (at == std::string::npos) return nullptr;
  const auto from = at + open.size();
  return nlohmann::json::parse(html.substr(from, html.find("</script>", from) - from));
}

// A run's evaluation times on one network, from atoll retime.
std::vector<double> retimed_eval_times(const std::string& dir, double bandwidth, double latency) {
  const RetimedRun r = retime_run(dir, {"network.bandwidth=" + format_number("%.17g", bandwidth),
                                        "network.latency=" + format_number("%.17g", latency) + "s"});
  std::string metrics;
  for (const auto& line : r.events) metrics += line + "\n";
  return parse_run(dir, r.summary_json, metrics, to_toml(r.config)).eval_time;
}

TEST(NetworkSliders, ThePageEmbedsEveryRunRetimedAtEveryGridPoint) {
  const std::vector<RunData> runs = {load_run(traced().ddp), load_run(traced().diloco)};
  ReportOptions o;
  o.network_sliders = true;
  const std::string html = html_report(runs, o);
  const nlohmann::json net = network_data(html);
  ASSERT_FALSE(net.is_null());
  EXPECT_EQ(net["bandwidths"].get<std::vector<double>>(), default_grid_bandwidths());
  EXPECT_EQ(net["latencies"].get<std::vector<double>>(), default_grid_latencies());
  const size_t latencies = default_grid_latencies().size();
  ASSERT_EQ(net["runs"].size(), 2u);
  // Grid point (b, l) is entry b * latencies + l; two corners and a middle point.
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& run = net["runs"][i];
    ASSERT_EQ(run["eval_time"].size(), default_grid_bandwidths().size() * latencies);
    EXPECT_EQ(run["eval_step"].get<std::vector<double>>(), runs[i].eval_step);
    EXPECT_EQ(run["eval_loss"].get<std::vector<double>>(), runs[i].eval_loss);
    for (auto [b, l] : {std::pair<size_t, size_t>{0, 4}, {10, 0}, {3, 2}}) {
      const auto want = retimed_eval_times(runs[i].dir, default_grid_bandwidths()[b], default_grid_latencies()[l]);
      EXPECT_EQ(run["eval_time"][b * latencies + l].get<std::vector<double>>(), want)
          << runs[i].name << " " << b << "," << l;
    }
  }
  // Slower links make the communicating runs slower.
  const auto& ddp_total = net["runs"][0]["sim_seconds"];
  EXPECT_GT(ddp_total[0].get<double>(), ddp_total[10 * latencies].get<double>());
  // Settings, the target the table uses, and the start at the runs' own 1 Gbit/s, 0 ms.
  ASSERT_EQ(net["groups"].size(), 2u);
  EXPECT_EQ(net["groups"][1]["name"], "diloco");
  EXPECT_EQ(net["groups"][1]["runs"], nlohmann::json::array({1}));
  EXPECT_EQ(net["target"].get<double>(), choose_target_loss(runs, o).value);
  EXPECT_EQ(net["start"], nlohmann::json::array({6, 0}));
  EXPECT_EQ(net["bandwidth_labels"][6], "1 Gbit/s");
  // The sliders, the crossover chart and the cells the script rewrites.
  EXPECT_NE(html.find("<input type=\"range\" id=\"whatif-bandwidth\" min=\"0\" max=\"10\" step=\"1\" value=\"6\">"),
            std::string::npos);
  EXPECT_NE(html.find("<output id=\"whatif-latency-value\">0 ms</output>"), std::string::npos);
  EXPECT_NE(html.find("<canvas id=\"crossover\">"), std::string::npos);
  const auto groups = group_by_seed(runs);
  const GroupFigures f = group_figures(groups[0], net["target"].get<double>());
  EXPECT_NE(html.find("data-whatif=\"ttt\" data-setting=\"0\" data-value=\"" +
                      format_double_exact(f.to_target.seconds.mean) + "\""),
            std::string::npos);
  EXPECT_NE(html.find("data-whatif=\"total\" data-setting=\"1\""), std::string::npos);
  EXPECT_NE(html.find("data-whatif=\"util\" data-setting=\"1\""), std::string::npos);
}

TEST(NetworkSliders, OffOrWithoutTracesThePageIsThePlainReport) {
  TempDir dir;
  for (const auto& run : {traced().ddp, traced().diloco})
    fs::copy(run, dir.path(fs::path(run).filename().string()), fs::copy_options::recursive);
  fs::remove_all(dir.path("diloco/timing"));  // as a run folder from before the traces
  const std::vector<RunData> runs = {load_run(dir.path("ddp")), load_run(dir.path("diloco"))};
  ReportOptions off, on;
  on.network_sliders = true;
  const std::string plain = html_report(runs, off);
  EXPECT_EQ(plain.find("id=\"whatif\""), std::string::npos);
  EXPECT_EQ(plain.find("data-whatif"), std::string::npos);
  EXPECT_TRUE(network_data(plain).is_null());
  EXPECT_EQ(html_report(runs, on), plain);
}

TEST(NetworkSliders, ABrokenTraceIsSaidOnThePageAndTheReportStands) {
  TempDir dir;
  fs::copy(traced().ddp, dir.path("ddp"), fs::copy_options::recursive);
  dir.write("ddp/timing/worker-1.trace", "not a trace");
  ReportOptions o;
  o.network_sliders = true;
  const std::string html = html_report({load_run(dir.path("ddp"))}, o);
  EXPECT_NE(html.find("<p class=\"note\" id=\"whatif-unavailable\">What-if network sliders unavailable: "),
            std::string::npos);
  EXPECT_TRUE(network_data(html).is_null());
  EXPECT_NE(html.find("<table id=\"summary\">"), std::string::npos);
}

TEST(NetworkSliders, RunsTooLongForTheBudgetGetANoteInsteadOfTheGrid) {
  ReportOptions o;
  o.network_sliders = true;
  o.network_sliders_budget = 100;  // the two 8-step, 2-worker runs need 2 x 16 x 55
  const std::string html = html_report({load_run(traced().ddp), load_run(traced().diloco)}, o);
  EXPECT_NE(html.find("the runs are long: the grid would replay 1.76e+03 worker-steps (budget 100)"),
            std::string::npos);
  EXPECT_TRUE(network_data(html).is_null());
}

TEST(NetworkSliders, StartAtTheGridPointNearestTheRunsNetwork) {
  NetworkGrid grid;
  grid.bandwidths = default_grid_bandwidths();
  grid.latencies = default_grid_latencies();
  RunData run;
  run.config = {{"network.bandwidth", "\"300Mbit/s\""}, {"network.latency", "\"25ms\""}};
  GridPoint p = nearest_grid_point(grid, run);
  EXPECT_EQ(format_bit_rate(grid.bandwidths[p.bandwidth]), "316 Mbit/s");  // nearest in log: 316, not 100
  EXPECT_EQ(format_latency(grid.latencies[p.latency]), "30 ms");
  run.config = {{"network.bandwidth", "\"1Gbit/s\""}, {"network.latency", "\"0ms\""}};
  p = nearest_grid_point(grid, run);
  EXPECT_EQ(p.bandwidth, 6u);
  EXPECT_EQ(p.latency, 0u);
  run.config.clear();  // a run that does not say: the middle
  p = nearest_grid_point(grid, run);
  EXPECT_EQ(p.bandwidth, 5u);
  EXPECT_EQ(p.latency, 2u);
}

TEST(NetworkSliders, ReadoutsReadAsPeopleQuoteLinks) {
  std::vector<std::string> bandwidths, latencies;
  for (double b : default_grid_bandwidths()) bandwidths.push_back(format_bit_rate(b));
  for (double l : default_grid_latencies()) latencies.push_back(format_latency(l));
  // 1 Gbit/s is 124999999.99999997 B/s on the grid: still "1 Gbit/s".
  EXPECT_EQ(bandwidths,
            (std::vector<std::string>{"1 Mbit/s", "3.16 Mbit/s", "10 Mbit/s", "31.6 Mbit/s", "100 Mbit/s", "316 Mbit/s",
                                      "1 Gbit/s", "3.16 Gbit/s", "10 Gbit/s", "31.6 Gbit/s", "100 Gbit/s"}));
  EXPECT_EQ(latencies, (std::vector<std::string>{"0 ms", "1 ms", "10 ms", "30 ms", "100 ms"}));
  EXPECT_EQ(format_latency(2.5), "2.5 s");
}

}  // namespace
}  // namespace atl
