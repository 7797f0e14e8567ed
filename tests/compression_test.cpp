// Codecs on strategies' payloads: what the ledger charges and that the
// decoded values, not the originals, are what gets reduced.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "compress/codec.h"
#include "compress/payload.h"
#include "payload_feedback.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

constexpr double kHarnessParams = 18;  // harness model: 5 x 3 + 3

TEST(Compression, DenseCodecsChargeTheirEncodedSizeInTheAllReduce) {
  struct Case {
    const char* codec;
    double bytes;  // per sync, per rank payload
  };
  for (const Case& c :
       {Case{"fp32", kHarnessParams * 8},  // uncompressed: the payload's own float64
        Case{"fp16", kHarnessParams * 2}, Case{"bf16", kHarnessParams * 2}, Case{"int8", kHarnessParams + 4},
        Case{"fp4", std::ceil(kHarnessParams / 2) + 4}, Case{"fp4-e2m1", std::ceil(kHarnessParams / 2) + 4}}) {
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

// Two workers' int8 payloads averaged by mean_all_reduce, codec.requantize_result
// on or off (optionally the non-blocking form). Returns each rank's result.
std::vector<at::Tensor> int8_mean(const std::vector<at::Tensor>& inputs, bool requantize, bool async = false) {
  CodecConfig cfg;
  cfg.requantize_result = requantize;
  InProcessGroup group(int64_t(inputs.size()));
  std::vector<at::Tensor> out(inputs.size());
  on_threads(group, [&](int64_t r, Communicator& comm) {
    PayloadCodec codec("int8", cfg);
    at::Tensor x = inputs[size_t(r)].clone();
    if (async) {
      mean_all_reduce_async(comm, codec, x, "grad").wait();
    } else {
      mean_all_reduce(comm, codec, x, "grad");
    }
    out[size_t(r)] = x;
  });
  return out;
}

// One int8 block with max 127: the grid step is exactly 1, so by hand
//   worker 0: [127, 3, 0.5]  decodes to [127, 3, 0]  (0.5 -> 0, half to even)
//   worker 1: [127, 0, 2.5]  decodes to [127, 0, 2]  (2.5 -> 2)
//   exact mean of the decoded: [127, 1.5, 1]
//   re-quantized (max 127, step 1): [127, 2, 1]      (1.5 -> 2, half to even)
TEST(Compression, RequantizedMeanIsTheCodecRoundTripOfTheExactDecodedMean) {
  const std::vector<at::Tensor> in = {at::tensor({127.0f, 3.0f, 0.5f}), at::tensor({127.0f, 0.0f, 2.5f})};
  const auto codec = make_codec("int8");
  const at::Tensor exact = (codec->round_trip(in[0]).decoded + codec->round_trip(in[1]).decoded).div_(2.0);
  ASSERT_TRUE(at::equal(exact, at::tensor({127.0f, 1.5f, 1.0f}))) << exact;
  const at::Tensor want = codec->round_trip(exact).decoded;
  ASSERT_TRUE(at::equal(want, at::tensor({127.0f, 2.0f, 1.0f}))) << want;
  for (bool async : {false, true}) {
    const auto got = int8_mean(in, /*requantize=*/true, async);
    for (const auto& g : got) EXPECT_TRUE(at::equal(g, want)) << g << (async ? " (async)" : "");
    EXPECT_FALSE(at::equal(got[0], exact)) << "re-quantizing must change this mean";
    // Off: the old path, the exact mean of the decoded payloads, bit for bit.
    for (const auto& g : int8_mean(in, /*requantize=*/false, async)) EXPECT_TRUE(at::equal(g, exact)) << g;
  }
}

// With requantize_result off, random payloads over three ranks give bitwise
// what the path before the option gave: every rank's decoded payload summed
// in rank order, divided by N.
TEST(Compression, RequantizeOffKeepsTheExactMeanOfDecodedPayloadsBitwise) {
  CodecConfig cfg;
  cfg.requantize_result = false;
  for (const char* name : {"fp16", "bf16", "int8", "fp4"}) {
    std::vector<at::Tensor> in;
    for (int r = 0; r < 3; ++r) in.push_back(at::randn({300}, at::kFloat) * (r + 1));
    const auto codec = make_codec(name);
    at::Tensor want = codec->round_trip(in[0]).decoded;
    for (int r = 1; r < 3; ++r) want.add_(codec->round_trip(in[size_t(r)]).decoded);
    want.div_(3.0);
    InProcessGroup group(3);
    on_threads(group, [&](int64_t r, Communicator& comm) {
      PayloadCodec payload(name, cfg);
      at::Tensor x = in[size_t(r)].clone();
      mean_all_reduce(comm, payload, x, "grad");
      EXPECT_TRUE(at::equal(x, want)) << name;
    });
  }
}

// The harness model's tensors are W (5 x 3 = 15) and b (3); DiLoCo's
// pseudo-gradient under topk with density 0.1:
//   global: k = round(0.1 * 18) = 2                     -> 2 * 8 = 16 bytes
//   tensor: round(1.5) = 2 for W + max(1, round(0.3)) = 1 for b -> 3 * 8 = 24
TEST(Compression, TopKScopeSetsTheKeptCountAndTheAllGatheredBytes) {
  for (const char* scope : {"tensor", "global"}) {
    Config cfg = base_config("diloco", "sgd");
    cfg.diloco.inner_steps = 1;
    cfg.diloco.codec = "topk";
    cfg.codec.topk_density = 0.1;
    cfg.codec.topk_scope = scope;
    Ledger l;
    run(cfg, 2, 3, 0.05, own_data, at::kDouble, &l);
    ASSERT_EQ(l.ops(), 3) << scope;
    for (const auto& e : l.entries()) {
      EXPECT_EQ(e.op, CommOp::AllGather);
      EXPECT_DOUBLE_EQ(e.payload_bytes, std::string(scope) == "tensor" ? 24 : 16) << scope;
    }
  }
}

// 2bit: per block of codec.block entries, the nearest of M * {-1, -1/3, 1/3,
// 1} with M the block's largest |x|; by hand for blocks of 4:
//   [9, -4, 1, -9.5]  M = 9.5: [9.5, -9.5/3, 9.5/3, -9.5]
//   [0.5, 0.1, 0, 0]  M = 0.5: 0.1 -> 0.5/3; 0 sits halfway between -M/3 and
//                     M/3 and goes to the even code, M/3
// and a payload path with error feedback on (the default for 2bit): the
// second payload carries what the first one lost.
TEST(Compression, TwoBitRoundsEachBlockToFourLevelsAndCarriesWhatItLostToTheNextPayload) {
  const at::Tensor x = at::tensor({9.0f, -4.0f, 1.0f, -9.5f, 0.5f, 0.1f, 0.0f, 0.0f});
  const float m = 9.5f, s = 0.5f;
  const at::Tensor want = at::tensor(
      {m, m * (-1.0f / 3.0f), m * (1.0f / 3.0f), -m, s, s * (1.0f / 3.0f), s * (1.0f / 3.0f), s * (1.0f / 3.0f)});
  const Encoded e = make_codec("2bit", 4)->round_trip(x);
  EXPECT_TRUE(at::equal(e.decoded, want)) << e.decoded;
  EXPECT_EQ(e.bytes, 2 + 2 * 4);  // 8 codes of 2 bits, 2 fp32 scales
  expect_payload_path_carries_the_loss("2bit", 4, x, want);
}

}  // namespace
}  // namespace atl
