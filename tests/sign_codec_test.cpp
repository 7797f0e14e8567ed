// The sign codec: +-(mean |x| of the block) by hand, its encoded size by
// hand, NaN kept to its block, and error feedback keeping the decoded sum on
// the input sum (the codec alone drifts away from it).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "compress/codec.h"
#include "compress/codec_names.h"
#include "compress/payload.h"
#include "payload_feedback.h"
#include "tensor_util.h"

namespace atl {
namespace {

using testing::gaussian;

at::Tensor sign_input(const std::vector<float>& v) { return at::tensor(v, at::kFloat); }

// Blocks of 4, by hand:
//   [1, -2, 3, -6]          mean |x| 3:    [3, -3, 3, -3]
//   [0.5, -0.25, 0, -0.25]  mean 0.25:     0 is >= 0, so +0.25
//   [0, 0, 0, 0]            mean 0:        zeros
//   [-1, 2.5]               mean 1.75 (a short last block)
// 14 signs in 2 bytes, 4 scales in 16.
TEST(CodecSign, EachBlockDecodesToPlusOrMinusItsMeanMagnitude) {
  const at::Tensor x = sign_input({1, -2, 3, -6, 0.5f, -0.25f, 0, -0.25f, 0, 0, 0, 0, -1, 2.5f});
  const at::Tensor want = sign_input({3, -3, 3, -3, 0.25f, -0.25f, 0.25f, -0.25f, 0, 0, 0, 0, -1.75f, 1.75f});
  const auto codec = make_codec("sign", 4);
  for (const auto dtype : {at::kFloat, at::kDouble}) {
    const Encoded e = codec->round_trip(x.to(dtype));
    EXPECT_TRUE(at::equal(e.decoded, want.to(dtype))) << dtype << e.decoded;
    EXPECT_EQ(e.bytes, 2 + 4 * 4) << dtype;
  }
  // -0 counts as >= 0; a zero block decodes to +0.
  const at::Tensor zeros = codec->round_trip(sign_input({-0.0f, 0, 0, -0.0f})).decoded;
  EXPECT_FALSE(std::signbit(zeros[0].item<float>()));
  EXPECT_FALSE(std::signbit(zeros[3].item<float>()));
  EXPECT_EQ(codec->round_trip(sign_input({-0.0f, 2, 0, 0})).decoded[0].item<float>(), 0.5f);
}

// The scale travels as fp32: a float64 block's mean |x| is rounded to float.
TEST(CodecSign, TheScaleIsTheMeanMagnitudeRoundedToFloat32) {
  const at::Tensor x = gaussian(300, 31, at::kDouble);
  const at::Tensor d = make_codec("sign", 100)->round_trip(x).decoded;
  for (int64_t lo = 0; lo < 300; lo += 100) {
    const at::Tensor xb = x.narrow(0, lo, 100);
    const double s = double(float(xb.abs().mean().item<double>()));
    const at::Tensor want = at::where(xb < 0, at::full_like(xb, -s), at::full_like(xb, s));
    EXPECT_TRUE(at::equal(d.narrow(0, lo, 100), want)) << lo;
  }
}

// The closed form: a bit per value, packed across the whole payload, plus
// an fp32 scale per block, by hand.
TEST(CodecSign, BytesAreABitPerValuePackedPlusFourPerBlock) {
  for (const int64_t block : {int64_t(128), int64_t(5), int64_t(3)}) {
    CodecSizing sizing;
    sizing.block = block;
    const auto codec = make_codec("sign", block);
    for (const int64_t n : {0, 1, 7, 8, 9, 127, 128, 129, 1000, 1001}) {
      const double bits = double((n + 7) / 8), scales = 4.0 * double((n + block - 1) / block);
      EXPECT_EQ(codec->round_trip(gaussian(n, uint64_t(n) + 3)).bytes, bits + scales) << "n=" << n;
      EXPECT_EQ(codec->bytes_for(n), bits + scales) << "n=" << n;
      const CodecBytes parts = codec_encoded_parts("sign", n, sizing);
      EXPECT_EQ(parts.values, bits) << "n=" << n;
      EXPECT_EQ(parts.scales, scales) << "n=" << n;
      EXPECT_EQ(parts.indices, 0);
    }
  }
  EXPECT_EQ(make_codec("sign")->bytes_for(1000), 125 + 4 * 8);  // ceil(1000 / 128) = 8 blocks
  EXPECT_EQ(make_codec("sign")->bytes_for(1001), 126 + 4 * 8);
  EXPECT_EQ(make_codec("sign")->bytes_for(9), 2 + 4);
}

// A NaN makes its block's scale NaN: that block decodes to NaN, the others
// as without it.
TEST(CodecSign, ANaNPoisonsItsOwnBlockOnly) {
  at::Tensor x = gaussian(40, 32);
  const at::Tensor clean = make_codec("sign", 8)->round_trip(x).decoded;
  x[13] = std::nanf("");
  const at::Tensor d = make_codec("sign", 8)->round_trip(x).decoded;
  EXPECT_TRUE(at::all(at::isnan(d.narrow(0, 8, 8))).item<bool>()) << d;
  EXPECT_TRUE(at::equal(d.narrow(0, 0, 8), clean.narrow(0, 0, 8)));
  EXPECT_TRUE(at::equal(d.narrow(0, 16, 24), clean.narrow(0, 16, 24)));
}

// Why the decoded sum stays near the input sum: per block of L entries, with
// s = mean |y|, ||y - s sign(y)||^2 = ||y||^2 - ||y||_1^2 / L <= (1 - 1/L) ||y||^2,
// so the residual e = y - C(y) of y = x + e_prev obeys ||e|| <= sqrt(1 - 1/L)
// (||x|| + ||e_prev||) and stays below sqrt(1-d) / (1 - sqrt(1-d)) max||x|| <=
// 2L max||x|| (d = 1/L). The decoded sum differs from the input sum by the last
// residual, whatever the number of rounds. Without feedback the sign codec's
// bias adds up round after round and leaves that bound far behind.
TEST(CodecSign, WithErrorFeedbackTheDecodedSumTracksTheInputSum) {
  const int64_t n = 64, block = 8, rounds = 2000;
  const at::Tensor mean = gaussian(n, 33, at::kDouble);
  ErrorFeedback ef(make_codec("sign", block));
  const auto plain = make_codec("sign", block);
  at::Tensor given = at::zeros({n}, at::kDouble), sent = at::zeros({n}, at::kDouble),
             sent_plain = at::zeros({n}, at::kDouble);
  at::Tensor largest = at::zeros({n / block}, at::kDouble);  // max over rounds of each block's ||x||
  for (int64_t r = 0; r < rounds; ++r) {
    const at::Tensor x = mean + 0.5 * gaussian(n, 1000 + uint64_t(r), at::kDouble);
    given += x;
    sent += ef.round_trip(x).decoded;
    sent_plain += plain->round_trip(x).decoded;
    largest = at::maximum(largest, x.view({n / block, block}).norm(2, {1}));
  }
  const at::Tensor bound = 2.0 * double(block) * largest;
  const at::Tensor gap = (sent - given).view({n / block, block}).norm(2, {1});
  const at::Tensor gap_plain = (sent_plain - given).view({n / block, block}).norm(2, {1});
  EXPECT_TRUE(at::all(gap <= bound).item<bool>()) << gap << bound;
  EXPECT_TRUE(at::all(gap_plain > bound).item<bool>()) << "the codec alone is not biased enough to tell: " << gap_plain;
  // The gap is the residual (up to rounding in float64).
  EXPECT_LT((sent + ef.residual() - given).abs().max().item<double>(), 1e-9);
}

// Error feedback is on by default in the payload path (codec.error_feedback),
// as for 2bit: the second payload carries what the first one lost.
TEST(CodecSign, ThePayloadPathCarriesWhatItLostToTheNextPayload) {
  const at::Tensor x = sign_input({1, -2, 3, -6, 0.5f, -0.25f, 0, -0.25f});
  const at::Tensor want = make_codec("sign", 4)->round_trip(x).decoded;
  expect_payload_path_carries_the_loss("sign", 4, x, want);
}

}  // namespace
}  // namespace atl
