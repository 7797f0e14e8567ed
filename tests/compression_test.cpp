// Codecs on strategies' payloads: what the ledger charges and that the
// decoded values, not the originals, are what gets reduced.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

constexpr double kParams = 18;  // harness model: 5 x 3 + 3

TEST(Compression, DenseCodecsChargeTheirEncodedSizeInTheAllReduce) {
  struct Case {
    const char* codec;
    double bytes;  // per sync, per rank payload
  };
  for (const Case& c : {Case{"fp32", kParams * 8},  // uncompressed: the payload's own float64
                        Case{"fp16", kParams * 2}, Case{"bf16", kParams * 2},
                        Case{"int8", kParams + 4}, Case{"fp4", std::ceil(kParams / 2) + 4},
                        Case{"fp4-e2m1", std::ceil(kParams / 2) + 4}}) {
    Config cfg = base_config("diloco", "adamw");
    cfg.diloco.inner_steps = 4;
    cfg.diloco.codec = c.codec;
    Ledger l;
    run(cfg, 2, 8, 0.01, own_data, at::kDouble, &l);
    ASSERT_EQ(l.ops(), 2) << c.codec;
    for (const auto& e : l.entries()) {
      EXPECT_EQ(e.op, CommOp::AllReduce) << c.codec;
      EXPECT_DOUBLE_EQ(e.payload_bytes, c.bytes) << c.codec;
      EXPECT_DOUBLE_EQ(e.sent_bytes, c.bytes) << c.codec;  // ring, N = 2: 2(N-1)/N = 1
    }
  }
}

TEST(Compression, LossyCodecsChangeTheTrajectoryOnlySlightly) {
  Config fp32 = base_config("ddp", "adamw");
  auto exact = run(fp32, 2, 10, 0.01, own_data);
  for (const char* codec : {"bf16", "int8", "fp4"}) {
    Config cfg = fp32;
    cfg.ddp.codec = codec;
    auto lossy = run(cfg, 2, 10, 0.01, own_data);
    EXPECT_FALSE(bitwise_equal(lossy[0], exact[0])) << codec << ": the payload was not compressed";
    EXPECT_TRUE(bitwise_equal(lossy[0], lossy[1])) << codec << ": replicas must stay identical";
    EXPECT_LT(max_abs_diff(lossy[0], exact[0]), 0.05) << codec;
  }
}

TEST(Compression, TopKIsAllGatheredAsIndexValuePairsAndItsResidualIsKept) {
  Config cfg = base_config("diloco", "sgd");
  cfg.diloco.inner_steps = 1;
  cfg.diloco.outer_lr = 1.0;
  cfg.diloco.outer_momentum = 0.0;
  cfg.diloco.codec = "topk";
  cfg.codec.topk_density = 0.25;  // k = round(0.25 * 18) = 5 (rounded half to even: 4.5 -> 4 or 5)
  std::vector<Ledger> ledgers;
  RunOptions o;
  o.ledgers = &ledgers;
  run_with(cfg, 3, 6, 0.05, own_data, o);
  for (const auto& l : ledgers) {
    ASSERT_EQ(l.ops(), 6);
    for (const auto& e : l.entries()) {
      EXPECT_EQ(e.op, CommOp::AllGather);
      const double k = e.payload_bytes / 8;  // int32 index + fp32 value
      EXPECT_GE(k, 1);
      EXPECT_LE(k, 5);
      EXPECT_DOUBLE_EQ(e.sent_bytes, 2 * e.payload_bytes);  // (N - 1) * S
    }
  }
  // With error feedback nothing is lost, only delayed: over the rounds every
  // coordinate moves even though each round sends at most 5 of 18.
  auto w = run(cfg, 3, 6, 0.05, own_data);
  Worker init(at::kDouble);
  at::Tensor moved = (w[0][0] - init.params[0]).abs() > 0;
  EXPECT_GT(moved.sum().item<int64_t>(), 5);
}

}  // namespace
}  // namespace atl
