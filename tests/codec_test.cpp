// Payload codecs (compress/codec.h): round trips, exact byte counts, rounding
// rules on hand-checked inputs, and error feedback's conservation property.
#include "compress/codec.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor_util.h"

namespace atl {
namespace {

using testing::gaussian;

at::Tensor vec(const std::vector<float>& v) { return at::tensor(v, at::kFloat); }

std::vector<double> values(const at::Tensor& x) {
  const at::Tensor c = x.to(at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// max|x| of each block of `block` elements, one entry per element.
std::vector<double> block_max(const at::Tensor& x, int64_t block) {
  const std::vector<double> p = values(x);
  const int64_t n = int64_t(p.size());
  std::vector<double> out(p.size());
  for (int64_t lo = 0; lo < n; lo += block) {
    const int64_t hi = std::min(n, lo + block);
    double m = 0;
    for (int64_t i = lo; i < hi; ++i) m = std::max(m, std::abs(p[size_t(i)]));
    for (int64_t i = lo; i < hi; ++i) out[size_t(i)] = m;
  }
  return out;
}

double mse(const at::Tensor& a, const at::Tensor& b) { return (a - b).pow(2).mean().item<double>(); }

TEST(CodecNames, MakeCodecAcceptsEveryListedNameAndRejectsOthersListingThem) {
  for (const auto& n : codec_names()) EXPECT_NO_THROW(make_codec(n)) << n;
  EXPECT_EQ(make_codec("fp4")->name(), "fp4-e3m0");
  EXPECT_EQ(make_codec("fp4-e2m1")->name(), "fp4-e2m1");
  EXPECT_EQ(make_codec("fp8")->name(), "fp8-e4m3");
  EXPECT_EQ(make_codec("fp8-e5m2")->name(), "fp8-e5m2");
  try {
    make_codec("fp3");
    FAIL() << "fp3 accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("fp3"), std::string::npos) << msg;
    for (const auto& n : codec_names()) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
}

TEST(CodecValidation, BadParametersAndPayloadsThrowInvalidArgument) {
  EXPECT_THROW(make_codec("int8", 0), std::invalid_argument);
  EXPECT_THROW(make_codec("topk", 128, 0.0), std::invalid_argument);
  EXPECT_THROW(make_codec("topk", 128, 1.5), std::invalid_argument);
  EXPECT_THROW(make_codec("topk", 128, 0.1, 0), std::invalid_argument);
  EXPECT_NO_THROW(make_codec("topk", 128, 1.0));
  for (const auto& n : codec_names()) {
    auto c = make_codec(n);
    EXPECT_THROW(c->round_trip(at::zeros({4, 4})), std::invalid_argument) << n;
    EXPECT_THROW(c->round_trip(at::zeros({8}, at::kInt)), std::invalid_argument) << n;
    EXPECT_THROW(c->round_trip(at::zeros({8}, at::kHalf)), std::invalid_argument) << n;
  }
}

TEST(CodecCast, Fp32IsTheIdentityAndCountsFourBytesPerElement) {
  const at::Tensor x = gaussian(1000, 1);
  const Encoded e = make_codec("fp32")->round_trip(x);
  EXPECT_TRUE(testing::bitwise_equal(e.decoded, x));
  EXPECT_NE(e.decoded.data_ptr(), x.data_ptr()) << "decoded must not alias the payload";
  EXPECT_EQ(e.bytes, 4000);
  EXPECT_EQ(make_codec("fp32")->bytes_for(7), 28);
}

TEST(CodecCast, Fp32OnFloat64RoundsThroughFloat32AndCountsFourBytes) {
  const at::Tensor x = gaussian(100, 2, at::kDouble);
  const Encoded e = make_codec("fp32")->round_trip(x);
  EXPECT_EQ(e.decoded.scalar_type(), at::kDouble);
  EXPECT_TRUE(testing::bitwise_equal(e.decoded, x.to(at::kFloat).to(at::kDouble)));
  EXPECT_FALSE(testing::bitwise_equal(e.decoded, x));
  EXPECT_EQ(e.bytes, 400);
}

TEST(CodecCast, Fp16AndBf16EqualAtenCastsBitwiseAndCountTwoBytesPerElement) {
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const at::Tensor x = gaussian(1001, 3, dtype) * 10;
    const Encoded h = make_codec("fp16")->round_trip(x), b = make_codec("bf16")->round_trip(x);
    EXPECT_TRUE(testing::bitwise_equal(h.decoded, x.to(at::kHalf).to(dtype)));
    EXPECT_TRUE(testing::bitwise_equal(b.decoded, x.to(at::kBFloat16).to(dtype)));
    EXPECT_EQ(h.bytes, 2002);
    EXPECT_EQ(b.bytes, 2002);
  }
}

TEST(CodecInt8, ErrorPerElementIsAtMostHalfTheBlockScale) {
  const int64_t block = 128;
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const at::Tensor x = gaussian(5000, 4, dtype) * 3;
    const std::vector<double> d = values(make_codec("int8", block)->round_trip(x).decoded), v = values(x);
    const std::vector<double> m = block_max(x, block);
    for (size_t i = 0; i < v.size(); ++i) {
      const double scale = m[i] / 127;
      ASSERT_LE(std::abs(d[i] - v[i]), scale / 2 * (1 + 1e-6)) << i;
    }
  }
}

TEST(CodecInt8, DecodedValuesAreIntegerMultiplesOfTheScaleWithinPlusMinus127) {
  const at::Tensor x = gaussian(1000, 5);
  const std::vector<double> d = values(make_codec("int8", 100)->round_trip(x).decoded);
  const std::vector<double> m = block_max(x, 100);
  for (size_t i = 0; i < d.size(); ++i) {
    const double q = d[i] / (m[i] / 127);
    EXPECT_NEAR(q, std::round(q), 1e-4) << i;
    EXPECT_LE(std::abs(std::round(q)), 127) << i;
  }
}

TEST(CodecInt8, BytesAreNPlusFourPerBlockForNNotAMultipleOfTheBlock) {
  auto c = make_codec("int8", 128);
  EXPECT_EQ(c->round_trip(gaussian(1000, 6)).bytes, 1000 + 4 * 8);  // ceil(1000 / 128) = 8
  EXPECT_EQ(c->bytes_for(129), 129 + 8);
  EXPECT_EQ(c->bytes_for(0), 0);
  EXPECT_EQ(make_codec("int8", 7)->bytes_for(15), 15 + 4 * 3);
}

TEST(CodecInt8, AnAllZeroBlockDecodesToZeros) {
  at::Tensor x = gaussian(300, 7);
  x.narrow(0, 100, 100).zero_();
  const at::Tensor d = make_codec("int8", 100)->round_trip(x).decoded;
  EXPECT_TRUE(at::all(d.narrow(0, 100, 100) == 0).item<bool>());
  EXPECT_FALSE(at::any(at::isnan(d)).item<bool>());
  EXPECT_TRUE(at::all(make_codec("int8")->round_trip(at::zeros({50})).decoded == 0).item<bool>());
}

TEST(CodecInt8, HandCheckedValuesRoundHalfToEven) {
  // max 127 -> scale 1: 2.5 -> 2, 3.5 -> 4, -0.5 -> 0, 10.49 -> 10, -126.6 -> -127.
  const at::Tensor x = vec({127, 2.5f, 3.5f, -0.5f, 10.49f, -126.6f, 0, 1});
  const at::Tensor want = vec({127, 2, 4, 0, 10, -127, 0, 1});
  EXPECT_TRUE(at::equal(make_codec("int8", 8)->round_trip(x).decoded, want));
}

// Every decoded value / block scale is a signed grid magnitude.
void expect_on_grid(const std::string& codec, const std::vector<double>& grid, double top) {
  const int64_t block = 64;
  const at::Tensor x = gaussian(1000, 8) * 0.01;
  const std::vector<double> d = values(make_codec(codec, block)->round_trip(x).decoded);
  const std::vector<double> m = block_max(x, block);
  for (size_t i = 0; i < d.size(); ++i) {
    const double r = std::abs(d[i]) / (m[i] / top);
    double nearest = 1e9;
    for (double g : grid) nearest = std::min(nearest, std::abs(r - g));
    ASSERT_LT(nearest, 1e-6) << codec << " element " << i << " decodes to " << r << " x scale";
  }
}

TEST(CodecFp4, E3M0DecodesToSignedPowersOfTwoTimesTheBlockMaxOrZero) {
  expect_on_grid("fp4-e3m0", {0, 1.0 / 64, 1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1}, 1);
}

TEST(CodecFp4, E2M1DecodesToSignedMxMagnitudesTimesMaxOverSix) {
  expect_on_grid("fp4-e2m1", {0, 0.5, 1, 1.5, 2, 3, 4, 6}, 6);
}

TEST(CodecFp4, TheBlockMaximumIsReconstructedExactly) {
  for (const char* codec : {"fp4-e3m0", "fp4-e2m1", "int8", "fp8-e4m3", "fp8-e5m2"}) {
    const at::Tensor x = gaussian(1000, 9) * 0.37;
    const at::Tensor d = make_codec(codec, 128)->round_trip(x).decoded;
    for (int64_t lo = 0; lo < 1000; lo += 128) {
      const int64_t len = std::min<int64_t>(128, 1000 - lo);
      const int64_t at_max = x.narrow(0, lo, len).abs().argmax().item<int64_t>() + lo;
      EXPECT_EQ(d[at_max].item<float>(), x[at_max].item<float>()) << codec << " block at " << lo;
    }
  }
}

TEST(CodecFp4, E3M0HandCheckedEightElements) {
  // max 2, so r = |x| / 2 is rounded to {0, 2^-6 .. 2^0}:
  //   0.6  -> r 0.3    (0.25 | 0.5, midpoint 0.375)           -> 0.25 -> 0.5
  //   0.4  -> r 0.2    (0.125 | 0.25, midpoint 0.1875)        -> 0.25 -> 0.5
  //   1.5  -> r 0.75   tie between 0.5 (code 6) and 1 (code 7) -> even code 6 -> 1
  //   0.04 -> r 0.02   (2^-6 | 2^-5, midpoint 0.0234375)      -> 2^-6 -> 0.03125
  //   0.02 -> r 0.01   (0 | 2^-6, midpoint 2^-7 = 0.0078125)  -> 2^-6 -> 0.03125
  //   2^-6 -> r 2^-7   tie between 0 (code 0) and 2^-6        -> 0
  const at::Tensor x = vec({2, -1, 0.6f, 0.4f, -0.04f, 0.02f, 1.5f, 0.015625f});
  const at::Tensor want = vec({2, -1, 0.5f, 0.5f, -0.03125f, 0.03125f, 1, 0});
  const Encoded e = make_codec("fp4", 8)->round_trip(x);
  EXPECT_TRUE(at::equal(e.decoded, want)) << e.decoded;
  EXPECT_EQ(e.bytes, 4 + 4);
}

TEST(CodecFp4, E2M1HandCheckedEightElementsTiesToEvenCode) {
  // max 3, so the scale is 0.5 and |x| / 0.5 is rounded to {0, 0.5, 1, 1.5, 2, 3, 4, 6}:
  //   -0.1  -> 0.2  below 0.25                 -> 0
  //   0.15  -> 0.3                             -> 0.5  -> 0.25
  //   0.375 -> 0.75 tie 0.5 (code 1) | 1 (2)   -> 1    -> 0.5
  //   -0.625-> 1.25 tie 1 (code 2) | 1.5 (3)   -> 1    -> -0.5
  //   1.3   -> 2.6  (2 | 3, midpoint 2.5)      -> 3    -> 1.5
  //   2.5   -> 5    tie 4 (code 6) | 6 (7)     -> 4    -> 2
  //   1.7   -> 3.4  (3 | 4, midpoint 3.5)      -> 3    -> 1.5
  const at::Tensor x = vec({3, -0.1f, 0.15f, 0.375f, -0.625f, 1.3f, 2.5f, 1.7f});
  const at::Tensor want = vec({3, 0, 0.25f, 0.5f, -0.5f, 1.5f, 2, 1.5f});
  const Encoded e = make_codec("fp4-e2m1", 8)->round_trip(x);
  EXPECT_TRUE(at::equal(e.decoded, want)) << e.decoded;
  EXPECT_EQ(e.bytes, 4 + 4);
}

TEST(CodecFp4, BytesAreHalfAByteRoundedUpPlusFourPerBlock) {
  for (const char* codec : {"fp4", "fp4-e3m0", "fp4-e2m1"}) {
    auto c = make_codec(codec, 128);
    EXPECT_EQ(c->round_trip(gaussian(1001, 10)).bytes, 501 + 4 * 8) << codec;
    EXPECT_EQ(c->bytes_for(256), 128 + 8) << codec;
    EXPECT_EQ(make_codec(codec, 32)->bytes_for(33), 17 + 8) << codec;
  }
}

TEST(CodecFp4, AnAllZeroBlockDecodesToZeros) {
  for (const char* codec : {"fp4-e3m0", "fp4-e2m1"}) {
    at::Tensor x = gaussian(200, 11);
    x.narrow(0, 0, 100).zero_();
    const at::Tensor d = make_codec(codec, 100)->round_trip(x).decoded;
    EXPECT_TRUE(at::all(d.narrow(0, 0, 100) == 0).item<bool>()) << codec;
  }
}

// Float32 payloads take a separate vectorised path; it must give bitwise what
// the generic path gives for a float64 copy, rounded to float32. The payload
// mixes scales, exact ties with every grid midpoint, signed zeros, NaN, whole
// zero blocks and a short last block.
TEST(CodecBlock, Float32PathEqualsTheFloat64PathRoundedToFloat32) {
  std::vector<float> p;
  const at::Tensor g = gaussian(5000, 7);
  for (int64_t i = 0; i < g.numel(); ++i) p.push_back(g[i].item<float>() * std::pow(10.0f, float(i % 7) - 3));
  for (float m : {1.0f, 0.375f, 96.0f}) {  // blocks whose max is m, holding every E3M0 / E2M1 midpoint
    std::vector<float> block(128, 0.0f);
    block[0] = m;
    const std::vector<double> e3 = {1.0 / 128, 3.0 / 128, 3.0 / 64, 3.0 / 32, 3.0 / 16, 3.0 / 8, 3.0 / 4};
    const std::vector<double> e2 = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5};
    for (size_t c = 0; c < 7; ++c) {
      block[1 + c] = float(e3[c] * m);
      block[9 + c] = -float(e3[c] * m);
      block[17 + c] = float(e2[c] * m / 6);
      block[25 + c] = -float(e2[c] * m / 6);
    }
    block[40] = -0.0f;
    block[41] = std::nanf("");
    block[42] = float(m * 63.5 / 127);  // int8 tie at code 63.5
    p.insert(p.end(), block.begin(), block.end());
  }
  p.insert(p.end(), 128, 0.0f);
  p.insert(p.end(), {0.5f, -0.25f, 3.0f});
  const at::Tensor x = vec(p);
  for (const char* name : {"int8", "fp4-e3m0", "fp4-e2m1", "fp8-e4m3", "fp8-e5m2"}) {
    for (int64_t block : {128, 32, 1}) {
      auto codec = make_codec(name, block);
      const at::Tensor f = codec->round_trip(x).decoded;
      const at::Tensor d = codec->round_trip(x.to(at::kDouble)).decoded.to(at::kFloat);
      EXPECT_TRUE(testing::bitwise_equal(f, d)) << name << " block " << block;
    }
  }
}

TEST(CodecTopK, KeepsExactlyTheKLargestMagnitudesAsAtTopkDoes) {
  const at::Tensor x = gaussian(1000, 12);
  const Encoded e = make_codec("topk", 128, 0.03)->round_trip(x);
  const at::Tensor kept = e.decoded.nonzero().reshape({-1});
  ASSERT_EQ(kept.numel(), 30);
  const at::Tensor want = std::get<0>(std::get<1>(at::topk(x.abs(), 30)).sort());
  EXPECT_TRUE(at::equal(kept, want));
  EXPECT_TRUE(at::equal(e.decoded.index_select(0, kept), x.index_select(0, kept)));
}

TEST(CodecTopK, TiesGoToTheLowerIndex) {
  const at::Tensor x = vec({0.5f, 1, -1, 0.25f, 1, -1, 1, 0});
  // k = round(0.375 * 8) = 3 among five entries of |x| = 1: indices 1, 2, 4.
  const at::Tensor d = make_codec("topk", 128, 0.375)->round_trip(x).decoded;
  EXPECT_TRUE(at::equal(d, vec({0, 1, -1, 0, 1, 0, 0, 0}))) << d;
}

TEST(CodecTopK, KIsAtLeastOneAndBytesAreKTimesFourPlusIndexBytes) {
  EXPECT_EQ(make_codec("topk", 128, 0.01)->round_trip(gaussian(1000, 13)).bytes, 10 * 8);
  EXPECT_EQ(make_codec("topk", 128, 0.01, 2)->bytes_for(1000), 10 * 6);
  const Encoded tiny = make_codec("topk", 128, 0.01)->round_trip(gaussian(20, 14));
  EXPECT_EQ(tiny.decoded.nonzero().numel(), 1);
  EXPECT_EQ(tiny.bytes, 8);
  EXPECT_EQ(make_codec("topk", 128, 0.01)->bytes_for(0), 0);
}

// Two tensors, A (5 elements) and B (1), density 0.3. By hand:
//   global: k = round(0.3 * 6) = round(1.8) = 2: the two largest |x| of all,
//           -10 and 9 (both in A); B's 0.5 is lost. 2 * (4 + 4) = 16 bytes.
//   tensor: k_A = round(0.3 * 5) = round(1.5) = 2 (llround: half away from 0):
//           -10 and 9; k_B = max(1, round(0.3)) = 1: 0.5. 3 * 8 = 24 bytes.
TEST(CodecTopK, PerTensorScopeKeepsEachTensorsLargestAndCountsItsKeptEntries) {
  const at::Tensor x = vec({3, -10, 9, 8, -7, 0.5f});
  const Encoded global = make_codec("topk", 128, 0.3)->round_trip(x);
  EXPECT_TRUE(at::equal(global.decoded, vec({0, -10, 9, 0, 0, 0}))) << global.decoded;
  EXPECT_EQ(global.bytes, 16);
  const auto per_tensor = make_codec("topk", 128, 0.3, 4, {5, 1});
  const Encoded tensor = per_tensor->round_trip(x);
  EXPECT_TRUE(at::equal(tensor.decoded, vec({0, -10, 9, 0, 0, 0.5f}))) << tensor.decoded;
  EXPECT_EQ(tensor.bytes, 24);
  EXPECT_EQ(per_tensor->bytes_for(6), 24);
  EXPECT_EQ(tensor.decoded.nonzero().numel() * 8, int64_t(tensor.bytes));  // bytes follow the kept count
  // The segments must cover the payload exactly.
  EXPECT_THROW(per_tensor->round_trip(vec({1, 2, 3})), std::invalid_argument);
  EXPECT_THROW(make_codec("topk", 128, 0.3, 4, {5, -1}), std::invalid_argument);
}

TEST(CodecTopK, Float64ValuesAreSentAsFp32) {
  const at::Tensor x = gaussian(100, 15, at::kDouble);
  const at::Tensor d = make_codec("topk", 128, 1.0)->round_trip(x).decoded;
  EXPECT_EQ(d.scalar_type(), at::kDouble);
  EXPECT_TRUE(testing::bitwise_equal(d, x.to(at::kFloat).to(at::kDouble)));
}

TEST(CodecErrorFeedback, DecodedSumPlusFinalResidualEqualsInputSum) {
  // Exact up to the rounding of x + e and y - decoded in the payload's dtype.
  for (auto dtype : {at::kFloat, at::kDouble}) {
    for (const std::string& codec : codec_names()) {
      ErrorFeedback ef(make_codec(codec, 64, 0.05));
      at::Tensor sent = at::zeros({500}, at::kDouble), given = at::zeros({500}, at::kDouble);
      for (int r = 0; r < 50; ++r) {
        const at::Tensor x = gaussian(500, 100 + uint64_t(r), dtype);
        sent += ef.round_trip(x).decoded.to(at::kDouble);
        given += x.to(at::kDouble);
      }
      const double err = (sent + ef.residual().to(at::kDouble) - given).abs().max().item<double>();
      EXPECT_LT(err, dtype == at::kDouble ? 1e-10 : 1e-3) << codec << " " << dtype;
      if (!codec_is_uncompressed(codec) || dtype == at::kDouble) {
        EXPECT_GT(ef.residual().abs().max().item<double>(), 0) << codec << ": no residual to conserve";
      }
    }
  }
}

TEST(CodecErrorFeedback, WithTopKEveryCoordinateIsEventuallyTransmitted) {
  // The same payload every round. An entry left out for t rounds carries t * x_i, so it is sent
  // once that outgrows the others' residuals: small entries wait about sum|x| / (k |x_i|) rounds.
  ErrorFeedback ef(make_codec("topk", 128, 0.05));
  const at::Tensor x = gaussian(200, 16);
  const double wait = x.abs().sum().item<double>() / (10 * x.abs().min().item<double>());
  at::Tensor seen = at::zeros({200}, at::kBool);
  int64_t rounds = 0;
  while (!at::all(seen).item<bool>() && rounds < 100000) {
    seen |= ef.round_trip(x).decoded != 0;
    ++rounds;
  }
  EXPECT_TRUE(at::all(seen).item<bool>()) << "after " << rounds << " rounds";
  EXPECT_LE(double(rounds), 2 * wait);
  // Without feedback the same 10 entries would be sent for ever.
  EXPECT_EQ(make_codec("topk", 128, 0.05)->round_trip(x).decoded.nonzero().numel(), 10);
}

TEST(CodecErrorFeedback, ThePayloadMustKeepItsShapeAndDtype) {
  ErrorFeedback ef(make_codec("int8"));
  EXPECT_FALSE(ef.residual().defined());
  ef.round_trip(gaussian(10, 17));
  EXPECT_THROW(ef.round_trip(gaussian(11, 17)), std::invalid_argument);
  EXPECT_THROW(ef.round_trip(gaussian(10, 17, at::kDouble)), std::invalid_argument);
  ef.reset();
  EXPECT_NO_THROW(ef.round_trip(gaussian(11, 17)));
  EXPECT_THROW(ErrorFeedback(nullptr), std::invalid_argument);
}

TEST(CodecError, MeanSquaredErrorOnGaussianDataOrdersFp32Fp16Bf16Int8Fp4) {
  const at::Tensor x = gaussian(1 << 16, 18);
  std::map<std::string, double> e;
  for (const char* codec : {"fp32", "fp16", "bf16", "int8", "fp4-e3m0", "fp4-e2m1"})
    e[codec] = mse(make_codec(codec)->round_trip(x).decoded, x);
  EXPECT_EQ(e["fp32"], 0);
  EXPECT_LT(e["fp32"], e["fp16"]);
  EXPECT_LT(e["fp16"], e["bf16"]);
  EXPECT_LT(e["bf16"], e["int8"]);
  EXPECT_LT(e["int8"], e["fp4-e2m1"]);
  EXPECT_LT(e["fp4-e2m1"], e["fp4-e3m0"]);
}

}  // namespace
}  // namespace atl
