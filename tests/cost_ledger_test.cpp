// `atoll cost` against the simulator: for the same model and setting, the
// bytes the cost estimate charges per worker equal the simulator's ledger,
// for every codec of the codec table (int8's and fp4's block scales and
// top-k's indices included): both ask the codec table for a payload's size.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "atoll/cost.h"
#include "atoll/net.h"
#include "atoll/train.h"
#include "child_process.h"
#include "compress/codec_names.h"
#include "test_util.h"
#include "tiny_data.h"

namespace atl {
namespace {

// The CostQuery `atoll cost` builds for `cfg`'s run of a model of `params`.
CostQuery query_for(const Config& cfg, int64_t params, const std::string& codec) {
  CostQuery q;
  q.params = double(params);
  q.codec = codec;
  q.codec_settings = cfg.codec;
  q.workers = cfg.strategy.workers;
  q.strategy = cfg.strategy.name;
  q.inner_steps = cfg.diloco.inner_steps;
  q.steps = cfg.train.steps;
  return q;
}

class CostEqualsLedger : public ::testing::TestWithParam<std::string> {};

TEST_P(CostEqualsLedger, BytesSentPerWorkerInDdpAndDiLoCoRunsEqualTheSimulatorsLedger) {
  const std::string codec = GetParam();
  for (const char* strategy : {"ddp", "diloco"}) {
    Config cfg = tiny_config(strategy, 3);
    cfg.ddp.codec = cfg.diloco.codec = codec;
    // The cost estimate counts top-k over the whole payload (it knows no
    // tensor sizes); per tensor, k is rounded per tensor.
    cfg.codec.topk_scope = "global";
    const RunSummary s = simulate(cfg);
    const CostReport r = estimate_cost(query_for(cfg, s.params, codec));
    EXPECT_DOUBLE_EQ(r.run_bytes_sent, s.bytes_sent_per_worker) << strategy << " " << codec;
    EXPECT_GT(r.run_bytes_sent, 0) << strategy << " " << codec;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCodec, CostEqualsLedger, ::testing::ValuesIn(codec_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';  // fp4-e2m1: gtest names are identifiers
                           return name;
                         });

// The block scales are what the old bytes-per-element table left out: int8
// is 1 + 4/128 bytes per value at codec.block = 128, fp4 0.5 + 4/128.
TEST(CostCodec, Int8AndFp4CountTheirBlockScales) {
  CostQuery q;
  q.params = 128 * 1000;
  q.codec = "int8";
  EXPECT_EQ(estimate_cost(q).model_bytes, 128 * 1000 + 4 * 1000);
  q.codec = "fp4";
  EXPECT_EQ(estimate_cost(q).model_bytes, 64 * 1000 + 4 * 1000);
  q.codec_settings.block = 32;
  EXPECT_EQ(estimate_cost(q).model_bytes, 64 * 1000 + 4 * 4000);
  q.codec = "fp3";
  const std::string msg = testing::invalid_argument_message([&] { estimate_cost(q); });
  EXPECT_NE(msg.find("unknown codec 'fp3'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(codec_choices()), std::string::npos) << msg;
}

// The CLI passes --dtype to the codec table: int8 prints its size with scales.
TEST(CostCodec, AtollCostDtypeInt8ReportsBytesWithItsBlockScales) {
  testing::TempDir dir;
  testing::ChildProcess cli(testing::kAtoll, {"cost", "--params=128000", "--dtype=int8", "--workers=4"},
                            dir.path("out"), dir.path("err"));
  ASSERT_EQ(cli.wait_exit(std::chrono::seconds(60)), 0) << cli.err_text();
  const std::string out = cli.out_text();
  EXPECT_NE(out.find("128k parameters as int8 (1.031 bytes/element)"), std::string::npos) << out;
  EXPECT_NE(out.find("132 kB"), std::string::npos) << out;  // 128000 + 4 * 1000 bytes
}

}  // namespace
}  // namespace atl
