// The fp8 codecs (fp8-e4m3, "fp8", and fp8-e5m2): the rounding against each
// format's code table built here from the bit layout, the decoded grid of a
// block on hand-checked inputs, and the encoded size by hand.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_names.h"
#include "compress/fp8.h"
#include "tensor_util.h"

namespace atl {
namespace {

using testing::gaussian;

// The non-negative finite values of an fp8 format in code order, from the
// bit layout: code = exponent field << mantissa_bits | mantissa; exponent
// field 0 holds the subnormals mantissa * 2^(1 - bias - mantissa_bits).
// e4m3 (bias 7) has every exponent field but the top code 0x7F (NaN);
// e5m2 (bias 15) loses its top exponent field to Inf and NaN.
std::vector<double> fp8_code_values(int mantissa_bits, int bias, int last_code) {
  std::vector<double> v;
  for (int code = 0; code <= last_code; ++code) {
    const int field = code >> mantissa_bits, mantissa = code & ((1 << mantissa_bits) - 1);
    const double fraction = double(mantissa) / double(1 << mantissa_bits);
    v.push_back(field == 0 ? std::ldexp(fraction, 1 - bias) : std::ldexp(1 + fraction, field - bias));
  }
  return v;
}
std::vector<double> e4m3_values() { return fp8_code_values(3, 7, 0x7E); }
std::vector<double> e5m2_values() { return fp8_code_values(2, 15, 0x7B); }

TEST(Fp8Rounding, TheCodeTablesSpanTheOcpRanges) {
  const std::vector<double> e4m3 = e4m3_values(), e5m2 = e5m2_values();
  EXPECT_EQ(e4m3.back(), 448);
  EXPECT_EQ(e4m3[1], std::ldexp(1.0, -9));
  EXPECT_EQ(e5m2.back(), 57344);
  EXPECT_EQ(e5m2[1], std::ldexp(1.0, -16));
  EXPECT_EQ(kFp8E4M3.max_finite, e4m3.back());
  EXPECT_EQ(kFp8E5M2.max_finite, e5m2.back());
}

// Every value is kept; every midpoint of two neighbours goes to the even
// code, and the doubles either side of it to the nearer neighbour.
TEST(Fp8Rounding, EveryValueIsKeptAndEveryMidpointGoesToTheEvenCode) {
  for (const bool e4m3 : {true, false}) {
    const Fp8Format& f = e4m3 ? kFp8E4M3 : kFp8E5M2;
    const std::vector<double> v = e4m3 ? e4m3_values() : e5m2_values();
    const char* name = e4m3 ? "e4m3" : "e5m2";
    for (size_t c = 0; c < v.size(); ++c) {
      ASSERT_EQ(fp8_round(v[c], f), v[c]) << name << " code " << c;
      if (c + 1 == v.size()) break;
      const double mid = 0.5 * (v[c] + v[c + 1]);
      const double even = c % 2 == 0 ? v[c] : v[c + 1];
      ASSERT_EQ(fp8_round(mid, f), even) << name << " midpoint of codes " << c << ", " << c + 1;
      ASSERT_EQ(fp8_round(std::nextafter(mid, 0.0), f), v[c]) << name << " below midpoint " << c;
      ASSERT_EQ(fp8_round(std::nextafter(mid, 1e300), f), v[c + 1]) << name << " above midpoint " << c;
    }
  }
}

// Above the largest finite value the result saturates (e4m3's next code is
// NaN, e5m2's Inf; neither is produced); NaN stays NaN.
TEST(Fp8Rounding, LargeValuesSaturateAtTheLargestFiniteValueAndNaNStaysNaN) {
  for (const Fp8Format* f : {&kFp8E4M3, &kFp8E5M2}) {
    const double top = f->max_finite;
    for (const double a : {top * (1 + 1.0 / 16), top * 1.5, top * 4, 1e30, std::numeric_limits<double>::infinity()})
      EXPECT_EQ(fp8_round(a, *f), top) << a;
    EXPECT_TRUE(std::isnan(fp8_round(std::nan(""), *f)));
    EXPECT_EQ(fp8_round(0.0, *f), 0.0);
    EXPECT_EQ(fp8_round(1e-300, *f), 0.0);
  }
}

at::Tensor floats(const std::vector<float>& v) { return at::tensor(v, at::kFloat); }

// A block whose max |x| is the format's largest value has scale 1: the
// decoded values are the format's own, by hand (e4m3: 3 mantissa bits, 2^-9
// the smallest subnormal; ties to the even mantissa):
//   1.0625 = 1 + 1/16: tie 1 (mantissa 0) | 1.125 (1)      -> 1
//   1.1875:            tie 1.125 (1) | 1.25 (2)            -> 1.25
//   -300: the binade [256, 512) steps by 32, 288 | 320     -> -288
//   2^-9: the smallest subnormal                           -> 2^-9
//   2^-10: tie 0 | 2^-9                                    -> 0
//   3 * 2^-10: tie 2^-9 (code 1) | 2^-8 (code 2)           -> 2^-8
//   -0.01: subnormal, 0.01 / 2^-9 = 5.12                   -> -5 * 2^-9
// The same block scaled by 2^-4 decodes to the same values scaled by 2^-4
// (the grid is relative to the block max).
TEST(CodecFp8, E4M3DecodesABlockToTheFormatsGridScaledToItsMax) {
  const std::vector<float> x = {448, 1.0625f, 1.1875f, -300, 0x1p-9f, 0x1p-10f, 3 * 0x1p-10f, -0.01f};
  const std::vector<float> want = {448, 1, 1.25f, -288, 0x1p-9f, 0, 0x1p-8f, -5 * 0x1p-9f};
  for (const char* name : {"fp8", "fp8-e4m3"}) {
    const auto codec = make_codec(name, 8);
    const Encoded e = codec->round_trip(floats(x));
    EXPECT_TRUE(at::equal(e.decoded, floats(want))) << name << e.decoded;
    EXPECT_EQ(e.bytes, 8 + 4) << name;
    EXPECT_TRUE(at::equal(codec->round_trip(floats(x) * 0x1p-4f).decoded, floats(want) * 0x1p-4f)) << name;
  }
}

// e5m2 by hand (2 mantissa bits, 2^-16 the smallest subnormal, 57344 the max):
//   1.125: tie 1 (mantissa 0) | 1.25 (1)                   -> 1
//   1.375: tie 1.25 (1) | 1.5 (2)                          -> 1.5
//   -40000: [32768, 65536) steps by 8192, 4.88 steps       -> -40960
//   53248: tie 49152 (mantissa 2) | 57344 (3)              -> 49152
//   2^-16 -> 2^-16; 2^-17 tie 0 | 2^-16 -> 0; 3 * 2^-17 tie code 1 | 2 -> 2^-15
TEST(CodecFp8, E5M2DecodesABlockToTheFormatsGridScaledToItsMax) {
  const std::vector<float> x = {57344, 1.125f, 1.375f, -40000, 53248, 0x1p-16f, 0x1p-17f, 3 * 0x1p-17f};
  const std::vector<float> want = {57344, 1, 1.5f, -40960, 49152, 0x1p-16f, 0, 0x1p-15f};
  const auto codec = make_codec("fp8-e5m2", 8);
  const Encoded e = codec->round_trip(floats(x));
  EXPECT_TRUE(at::equal(e.decoded, floats(want))) << e.decoded;
  EXPECT_EQ(e.bytes, 8 + 4);
  EXPECT_TRUE(at::equal(codec->round_trip(floats(x) * 0x1p-4f).decoded, floats(want) * 0x1p-4f));
}

// With a block max of 1 the scale is 1 / top: the smallest value above 0 is
// the smallest subnormal times it, 2^-9 / 448 (e4m3), 2^-16 / 57344 (e5m2);
// 0.4 of it decodes to 0, 0.6 of it to it. Inputs in float64: x * 448 / 1
// rounds to 2^-9 (2^-16) and decodes to 2^-9 * 1 / 448 again.
TEST(CodecFp8, TheSmallestNonZeroValueIsTheSmallestSubnormalTimesTheScale) {
  for (const bool e4m3 : {true, false}) {
    const std::string name = e4m3 ? "fp8-e4m3" : "fp8-e5m2";
    const double tiny = e4m3 ? std::ldexp(1.0, -9) / 448 : std::ldexp(1.0, -16) / 57344;
    const at::Tensor x = at::tensor({1.0, -tiny, 0.4 * tiny, 0.6 * tiny}, at::kDouble);
    const at::Tensor want = at::tensor({1.0, -tiny, 0.0, tiny}, at::kDouble);
    const at::Tensor d = make_codec(name, 4)->round_trip(x).decoded;
    EXPECT_TRUE(at::equal(d, want)) << name << d;
  }
}

// The closed form: a byte per value plus an fp32 scale per block, by hand.
TEST(CodecFp8, BytesAreOneBytePerValuePlusFourPerBlock) {
  for (const char* name : {"fp8", "fp8-e4m3", "fp8-e5m2"}) {
    for (const int64_t block : {int64_t(128), int64_t(5), int64_t(3)}) {
      CodecSizing sizing;
      sizing.block = block;
      const auto codec = make_codec(name, block);
      for (const int64_t n : {0, 1, 7, 8, 9, 127, 128, 129, 1000, 1001}) {
        const int64_t blocks = (n + block - 1) / block;
        const double want = double(n) + 4.0 * double(blocks);
        EXPECT_EQ(codec->round_trip(gaussian(n, uint64_t(n) + 1)).bytes, want) << name << " n=" << n;
        EXPECT_EQ(codec->bytes_for(n), want) << name << " n=" << n;
        const CodecBytes parts = codec_encoded_parts(name, n, sizing);
        EXPECT_EQ(parts.values, double(n)) << name << " n=" << n;
        EXPECT_EQ(parts.scales, 4.0 * double(blocks)) << name << " n=" << n;
        EXPECT_EQ(parts.indices, 0) << name;
      }
    }
    EXPECT_EQ(make_codec(name)->bytes_for(1001), 1001 + 4 * 8) << name;  // ceil(1001 / 128) = 8
  }
}

// A NaN entry decodes to NaN; its block's max skips it, so the block's other
// entries and the other blocks decode as they would with a 0 there.
TEST(CodecFp8, ANaNEntryDecodesToNaNAndLeavesEveryOtherEntryAlone) {
  for (const char* name : {"fp8-e4m3", "fp8-e5m2"}) {
    at::Tensor x = gaussian(40, 21);
    at::Tensor zeroed = x.clone();
    x[13] = std::nanf("");
    zeroed[13] = 0.0f;
    for (const auto dtype : {at::kFloat, at::kDouble}) {
      const at::Tensor d = make_codec(name, 8)->round_trip(x.to(dtype)).decoded;
      const at::Tensor clean = make_codec(name, 8)->round_trip(zeroed.to(dtype)).decoded;
      EXPECT_TRUE(std::isnan(d[13].item<double>())) << name;
      EXPECT_EQ(at::isnan(d).sum().item<int64_t>(), 1) << name;
      d[13] = 0.0;
      EXPECT_TRUE(at::equal(d, clean)) << name << " " << dtype;
    }
  }
}

}  // namespace
}  // namespace atl
