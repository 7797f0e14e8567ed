// SparseLoCo's codecs (compress/chunk_topk.h) and the method built on them
// (strategy/sparseloco.h): the selection, the 2-bit grid, the message and
// its closed-form size, refusal of bad messages, decayed error feedback, and
// SparseLoCo's outer step against DiLoCo's.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "atoll/setup.h"
#include "atoll/strategy.h"
#include "compress/chunk_topk.h"
#include "compress/codec.h"
#include "compress/codec_names.h"
#include "strategy_harness.h"
#include "tensor_util.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::gaussian;

CodecSizing chunked(int64_t chunk, int64_t k, std::vector<int64_t> segments = {}) {
  CodecSizing s;
  s.chunk = chunk;
  s.chunk_topk = k;
  s.topk_segments = std::move(segments);
  return s;
}

// By hand, C = 4096, k = 64, tensors of 8,192 and 1,808 entries: chunks of
// 4096, 4096 and 1808 keep 64, 64 and round(64 * 1808 / 4096) = round(28.25)
// = 28 entries, K = 156, positions of 12 bits.
//   topk-chunk:       156 * 4 values + ceil(156 * 12 / 8) = 234 position bytes        = 858
//   topk-chunk-2bit:  ceil(156 * 2 / 8) = 39 code bytes + 234 + 3 chunks * 4 scale bytes = 285
TEST(ChunkTopK, MessageSizeIsTheClosedFormByPart) {
  const CodecSizing s = chunked(4096, 64, {8192, 1808});
  EXPECT_EQ(chunk_index_bits(4096), 12);
  const CodecBytes fp32 = codec_encoded_parts("topk-chunk", 10000, s);
  EXPECT_EQ(fp32.values, 624);
  EXPECT_EQ(fp32.indices, 234);
  EXPECT_EQ(fp32.scales, 0);
  const CodecBytes two = codec_encoded_parts("topk-chunk-2bit", 10000, s);
  EXPECT_EQ(two.values, 39);
  EXPECT_EQ(two.indices, 234);
  EXPECT_EQ(two.scales, 12);
  for (const char* name : {"topk-chunk", "topk-chunk-2bit"}) {
    auto codec = make_codec(name, s);
    const Encoded e = codec->round_trip(gaussian(10000, 5));
    EXPECT_EQ(e.wire.numel(), codec_encoded_bytes(name, 10000, s)) << name;
    EXPECT_EQ(e.bytes, e.wire.numel()) << name;
    EXPECT_EQ(e.decoded.ne(0).sum().item<int64_t>(), 156) << name;
  }
  // SparseLoCo's density: 64 of 4096 = 1.5625% of the entries; in 2 bits plus
  // 12-bit positions and a 32-bit scale per chunk that is 928 bits per 4,096
  // entries, 0.227 bits per entry: 141x below fp32's 32 (paper: > 97x).
  const double bits = 8 * codec_encoded_bytes("topk-chunk-2bit", 4096 * 1000, chunked(4096, 64)) / (4096 * 1000.0);
  EXPECT_NEAR(bits, (64 * 14 + 32) / 4096.0, 1e-12);
}

// Chunks of C = 4 keep k = 2: the two largest |x| of each, ties to the lower
// position; the last chunk (2 entries) keeps round(2 * 2 / 4) = 1.
TEST(ChunkTopK, KeepsTheLargestOfEachChunkTiesToTheLowerPosition) {
  const at::Tensor x = at::tensor({1.0f, -5.0f, 3.0f, 3.0f, /**/ 0.5f, 0.5f, 0.5f, -0.25f, /**/ 2.0f, -7.0f});
  const at::Tensor got = make_codec("topk-chunk", chunked(4, 2))->round_trip(x).decoded;
  const at::Tensor want = at::tensor({0.0f, -5.0f, 3.0f, 0.0f, /**/ 0.5f, 0.5f, 0.0f, 0.0f, /**/ 0.0f, -7.0f});
  EXPECT_TRUE(at::equal(got, want)) << got;
}

// 2 bits: M = the largest kept |v| of the chunk; each kept value becomes the
// nearest of M * {-1, -1/3, 1/3, 1}. Chunk [9, -4, 1, -9.5] keeps all four
// (C = k = 4), M = 9.5: 9 -> 9.5, -4 -> -9.5/3 (|-4 + 3.17| < |-4 + 9.5|),
// 1 -> 9.5/3, -9.5 -> -9.5.
TEST(ChunkTopK, TwoBitValuesAreTheNearestOfFourLevelsOfTheChunksScale) {
  const at::Tensor x = at::tensor({9.0f, -4.0f, 1.0f, -9.5f});
  const at::Tensor got = make_codec("topk-chunk-2bit", chunked(4, 4))->round_trip(x).decoded;
  const float m = 9.5f;
  const at::Tensor want = at::tensor({m, m * (-1.0f / 3.0f), m * (1.0f / 3.0f), -m});
  EXPECT_TRUE(at::equal(got, want)) << got;
  // An all-zero chunk decodes to zeros.
  const at::Tensor zeros = make_codec("topk-chunk-2bit", chunked(4, 2))->round_trip(at::zeros({4})).decoded;
  EXPECT_EQ(zeros.abs().sum().item<float>(), 0.0f);
}

// Every receiver decodes the message to exactly what the sender kept:
// both codecs, float32 and float64 payloads, several tensors and chunk sizes.
TEST(ChunkTopK, TheMessageDecodesToTheSendersDecodedValuesBitwise) {
  for (const char* name : {"topk-chunk", "topk-chunk-2bit"})
    for (const auto dtype : {at::kFloat, at::kDouble})
      for (const CodecSizing& s : {chunked(4096, 64, {3000, 10, 9000}), chunked(7, 3), chunked(1, 1, {5, 0, 4})}) {
        int64_t n = 0;
        for (int64_t len : s.topk_segments) n += len;
        if (s.topk_segments.empty()) n = 1001;
        auto codec = make_codec(name, s);
        const Encoded e = codec->round_trip(gaussian(n, 9, dtype));
        at::Tensor acc = at::zeros({n}, dtype);
        codec->add_wire(e.wire, acc);
        EXPECT_TRUE(at::equal(acc, e.decoded)) << name << " n=" << n;
      }
}

// A peer's message of the wrong size, or with a position outside its chunk
// or repeated, is refused with the reason, and the sum is left as it was.
TEST(ChunkTopK, BadMessagesAreRefusedAndLeaveTheSumUnchanged) {
  const CodecSizing s = chunked(8, 2, {8, 3});  // chunks of 8 and 3 entries keep 2 and round(0.75) = 1
  auto codec = make_codec("topk-chunk", s);
  const at::Tensor x = at::arange(11, at::kFloat);
  const at::Tensor wire = codec->round_trip(x).wire;  // 3 fp32 values, then 3 x 3-bit positions in 2 bytes
  ASSERT_EQ(wire.numel(), 3 * 4 + 2);
  const at::Tensor before = at::full({11}, 0.5f);
  auto refused = [&](const at::Tensor& message, const std::string& why) {
    at::Tensor acc = before.clone();
    const std::string msg = testing::invalid_argument_message([&] { codec->add_wire(message, acc); });
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
    EXPECT_TRUE(at::equal(acc, before));
  };
  refused(wire.narrow(0, 0, 13), "14 bytes");
  refused(at::cat({wire, wire.narrow(0, 0, 1)}), "14 bytes");
  refused(wire.to(at::kInt), "14 bytes");
  // Positions 6, 7 | 2 packed from bit 0: the third (bits 6..8) set to 7 is outside the 3-entry chunk.
  at::Tensor outside = wire.clone();
  outside[12] = uint8_t(outside[12].item<uint8_t>() | 0xC0);
  outside[13] = uint8_t(outside[13].item<uint8_t>() | 0x01);
  refused(outside, "out of range or not increasing");
  // The second position (bits 3..5) equal to the first: not increasing.
  at::Tensor repeated = wire.clone();
  repeated[12] = uint8_t((repeated[12].item<uint8_t>() & ~0x38) | (6 << 3));
  refused(repeated, "out of range or not increasing");
}

// e <- beta * e + x before encoding; with k = C nothing is dropped, so with
// top-k of 1 of 2 the residual is exactly what was not sent, decayed once
// per round.
TEST(ChunkTopK, ErrorFeedbackDecaysTheResidualByBeta) {
  ErrorFeedback ef(make_codec("topk-chunk", chunked(2, 1)), 0.5);
  const at::Tensor x = at::tensor({4.0f, 1.0f});
  EXPECT_TRUE(at::equal(ef.round_trip(x).decoded, at::tensor({4.0f, 0.0f})));
  EXPECT_TRUE(at::equal(ef.residual(), at::tensor({0.0f, 1.0f})));
  // y = x + 0.5 * [0, 1] = [4, 1.5]: sends 4, keeps 1.5.
  EXPECT_TRUE(at::equal(ef.round_trip(x).decoded, at::tensor({4.0f, 0.0f})));
  EXPECT_TRUE(at::equal(ef.residual(), at::tensor({0.0f, 1.5f})));
  EXPECT_THROW(ErrorFeedback(make_codec("topk-chunk"), 1.5), std::invalid_argument);
}

using namespace harness;

// SparseLoCo keeping every entry (k = C, fp32 values) sends the exact
// pseudo-gradient and leaves no residual: it is then DiLoCo without outer
// momentum at SparseLoCo's outer learning rate, bit for bit.
TEST(SparseLoCo, KeepingEveryEntryIsDiLoCoWithoutMomentumBitwise) {
  Config sparse = base_config("sparseloco", "adamw");
  sparse.diloco.inner_steps = 3;
  sparse.sparseloco.codec = "topk-chunk";
  sparse.sparseloco.outer_lr = 0.8;
  sparse.codec.chunk = 4;
  sparse.codec.chunk_topk = 4;
  Config diloco = base_config("diloco", "adamw");
  diloco.diloco.inner_steps = 3;
  diloco.diloco.outer_lr = 0.8;
  diloco.diloco.outer_momentum = 0;
  RunOptions o;
  o.dtype = at::kFloat;  // the codec's values are fp32
  const auto a = run_with(sparse, 3, 9, 0.01, own_data, o);
  const auto b = run_with(diloco, 3, 9, 0.01, own_data, o);
  EXPECT_TRUE(bitwise_equal(a[0], b[0]));
  EXPECT_TRUE(bitwise_equal(a[0], a[2]));
}

// At SparseLoCo's settings each sync all-gathers one message per worker of
// the closed-form size for the model's tensors (15 and 3 entries here), and
// the run differs from DiLoCo's while every worker holds the same theta_g.
TEST(SparseLoCo, EachSyncAllGathersTheClosedFormMessageAndWorkersAgree) {
  Config cfg = base_config("sparseloco", "adamw");
  cfg.diloco.inner_steps = 2;
  cfg.codec.chunk = 8;
  cfg.codec.chunk_topk = 2;
  std::vector<Ledger> ledgers;
  RunOptions o;
  o.ledgers = &ledgers;
  const auto w = run_with(cfg, 3, 6, 0.05, own_data, o);
  const double message = codec_encoded_bytes("topk-chunk-2bit", 18, chunked(8, 2, {15, 3}));
  // chunks 8, 7 | 3 keep 2, round(1.75) = 2 | round(0.75) = 1: K = 5; ceil(10 / 8) + ceil(15 / 8) + 3 * 4
  EXPECT_EQ(message, 2 + 2 + 12);
  for (const auto& l : ledgers) {
    ASSERT_EQ(l.ops(), 3);
    for (const auto& e : l.entries()) {
      EXPECT_EQ(e.op, CommOp::AllGather);
      EXPECT_EQ(e.tag, "pseudo-grad");
      EXPECT_EQ(e.payload_bytes, message);
      EXPECT_EQ(e.sent_bytes, 2 * message);
    }
  }
  EXPECT_TRUE(bitwise_equal(w[0], w[1]));
  EXPECT_TRUE(bitwise_equal(w[0], w[2]));
  Config diloco = base_config("diloco", "adamw");
  diloco.diloco.inner_steps = 2;
  EXPECT_GT(max_abs_diff(w[0], run(diloco, 3, 6, 0.05, own_data)[0]), 1e-6);
}

TEST(SparseLoCo, BadSettingsAreRefusedSayingWhatIsAllowed) {
  Config c;
  c.strategy.name = "sparseloco";
  c.sparseloco.error_decay = 1.2;
  c.sparseloco.outer_lr = 0;
  c.sparseloco.codec = "topk";
  c.codec.chunk_topk = 5000;
  std::string all;
  for (const std::string& problem : validate(c)) all += problem + "\n";
  for (const char* want :
       {"sparseloco.error_decay (beta) must be in [0, 1]", "sparseloco.outer_lr (lr_out) must be > 0",
        "sparseloco.codec", "topk-chunk-2bit", "codec.chunk_topk (k) must be in [1, codec.chunk]"})
    EXPECT_NE(all.find(want), std::string::npos) << all;
}

}  // namespace
}  // namespace atl
