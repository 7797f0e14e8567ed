// The codec table (compress/codec_names.h), codec by codec: each encoder
// counts exactly the table's size of its payload, its traits describe what
// it does to a payload, and every place that must know a codec (help,
// validation, `atoll cost`) does. A codec added to the table is covered by
// every test here the day it lands.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/cost.h"
#include "atoll/net.h"
#include "atoll/setup.h"
#include "compress/codec.h"
#include "compress/codec_names.h"
#include "tensor_util.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::gaussian;

// Magnitudes in [0.5, 1) with random signs: every dense codec keeps every
// entry non-zero (fp4-e3m0's smallest step above 0 is max/64).
at::Tensor within_an_octave(int64_t n, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  const at::Tensor magnitude = at::rand({n}, g) * 0.5 + 0.5;
  const at::Tensor sign = at::randint(0, 2, {n}, g).to(at::kFloat) * 2 - 1;
  return magnitude * sign;
}

class CodecTable : public ::testing::TestWithParam<std::string> {};

// The encoder counts what it wrote (values, scales, kept pairs); the table
// computes the size from n alone. Lengths around the block and odd ones, a
// few sizings, both input dtypes.
TEST_P(CodecTable, RoundTripBytesEqualTheTablesEncodedSizeForEveryLength) {
  const std::string name = GetParam();
  for (const int64_t block : {int64_t(128), int64_t(5)}) {
    for (const double density : {0.01, 0.3, 1.0}) {
      CodecSizing sizing;
      sizing.block = block;
      sizing.topk_density = density;
      auto codec = make_codec(name, block, density);
      for (const int64_t n : {0, 1, 2, 3, 4, 5, 6, 127, 128, 129, 255, 256, 257, 1000, 1001}) {
        for (const auto dtype : {at::kFloat, at::kDouble}) {
          const at::Tensor x = gaussian(n, uint64_t(n) * 7 + 1, dtype);
          const std::string what = name + " n=" + std::to_string(n) + " block=" + std::to_string(block) +
                                   " density=" + std::to_string(density) + " " + c10::toString(dtype);
          EXPECT_EQ(codec->round_trip(x).bytes, codec_encoded_bytes(name, n, sizing)) << what;
          EXPECT_EQ(codec->bytes_for(n), codec_encoded_bytes(name, n, sizing)) << what;
        }
      }
    }
  }
}

// Segments (codec.topk_scope = tensor) are the top-k codec's; every codec
// takes them (make_codec and the table ignore them where they do not apply).
TEST_P(CodecTable, RoundTripBytesEqualTheTablesEncodedSizeForSegmentedPayloads) {
  const std::string name = GetParam();
  for (const std::vector<int64_t>& segments :
       {std::vector<int64_t>{5, 0, 1}, {100, 3, 250}, {1}, {0}, {64, 64, 64, 64, 1}}) {
    int64_t n = 0;
    for (int64_t len : segments) n += len;
    CodecSizing sizing;
    sizing.topk_density = 0.05;
    sizing.index_bytes = 2;
    sizing.topk_segments = segments;
    auto codec = make_codec(name, kDefaultCodecBlock, 0.05, 2, segments);
    EXPECT_EQ(codec->round_trip(gaussian(n, 3, at::kFloat)).bytes, codec_encoded_bytes(name, n, sizing))
        << name << " n=" << n;
  }
}

// sparse: keeps only some positions (the rest decode to 0) and sends their
// indices; dense codecs keep every position of a payload none of whose
// entries they round to zero.
TEST_P(CodecTable, SparseTraitIsWhetherTheCodecDropsPositions) {
  const std::string name = GetParam();
  const at::Tensor x = within_an_octave(1000, 11);
  const at::Tensor decoded = make_codec(name)->round_trip(x).decoded;
  const int64_t kept = decoded.ne(0).sum().item<int64_t>();
  if (codec_is_sparse(name)) {
    EXPECT_LT(kept, x.numel()) << name;
  } else {
    EXPECT_EQ(kept, x.numel()) << name;
  }
}

// uncompressed: a float32 payload travels as it is (the payload path skips
// the codec for it and the ledger counts the tensor's own bytes).
TEST_P(CodecTable, UncompressedTraitIsWhetherAFloat32PayloadComesBackBitwise) {
  const std::string name = GetParam();
  const at::Tensor x = gaussian(1000, 12, at::kFloat);
  const at::Tensor decoded = make_codec(name)->round_trip(x).decoded;
  const bool identical = std::memcmp(decoded.data_ptr(), x.data_ptr(), size_t(x.nbytes())) == 0;
  EXPECT_EQ(codec_is_uncompressed(name), identical) << name;
}

// Help: every codec key's help line names it; SPARTA's names it exactly
// when it is dense and needs no error feedback. Validation: every codec key
// accepts it; sparta.codec refuses it exactly when it is sparse or needs
// error feedback, DiLoCo's faults exactly when it is sparse.
TEST_P(CodecTable, HelpAndValidationKnowTheCodecAndItsSparseTrait) {
  const std::string name = GetParam();
  const CodecInfo* info = find_codec(name);
  ASSERT_NE(info, nullptr);
  const std::string shown = info->shorthand_for ? name + " (= " + info->shorthand_for + ")" : name;
  const bool is_shorthand_target = codec_choices().find("(= " + name + ")") != std::string::npos;
  if (!is_shorthand_target) {
    for (const char* key : {"ddp.codec", "diloco.codec", "streaming.codec"})
      EXPECT_NE(field_help(key).find(shown), std::string::npos) << key << ": " << field_help(key);
  }
  const std::string sparta_help = field_help("sparta.codec");
  if (!info->shorthand_for && !is_shorthand_target) {
    EXPECT_EQ(sparta_help.find(name) != std::string::npos, !info->sparse && !info->feedback) << sparta_help;
  }

  Config c;
  c.diloco.codec = c.ddp.codec = c.streaming.codec = name;
  EXPECT_TRUE(validate(c).empty()) << name;
  c = Config();
  c.strategy.name = "sparta";
  c.strategy.workers = 2;
  c.sparta.codec = name;
  EXPECT_EQ(validate(c).empty(), !info->sparse && !info->feedback) << name;
  c = Config();
  c.strategy.name = "diloco";
  c.strategy.workers = 2;
  c.faults.drop_prob = 0.1;
  c.diloco.codec = name;
  EXPECT_EQ(validate(c).empty(), !info->sparse) << name;
}

// `atoll cost --dtype=<codec>` charges the table's size of the model.
TEST_P(CodecTable, AtollCostChargesTheTablesSizeOfTheModel) {
  const std::string name = GetParam();
  CostQuery q;
  q.params = 1e6;
  q.codec = name;
  q.codec_settings.block = 64;
  q.codec_settings.topk_density = 0.02;
  CodecSizing sizing;
  sizing.block = 64;
  sizing.topk_density = 0.02;
  const CostReport r = estimate_cost(q);
  EXPECT_EQ(r.model_bytes, codec_encoded_bytes(name, 1000000, sizing)) << name;
  EXPECT_NE(cost_codec_choices().find(name), std::string::npos) << name;
}

INSTANTIATE_TEST_SUITE_P(EveryCodec, CodecTable, ::testing::ValuesIn(codec_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';  // fp4-e2m1: gtest names are identifiers
                           return name;
                         });

TEST(CodecTraits, NamesAreUniqueAndShorthandsNameACodecOfTheTable) {
  std::set<std::string> seen;
  for (const CodecInfo& c : codec_table()) {
    EXPECT_TRUE(seen.insert(c.name).second) << c.name;
    EXPECT_EQ(find_codec(c.name), &c);
    EXPECT_NE(c.encoded_parts, nullptr) << c.name;
    if (c.shorthand_for) {
      const CodecInfo* target = find_codec(c.shorthand_for);
      ASSERT_NE(target, nullptr) << c.name;
      EXPECT_EQ(target->sparse, c.sparse) << c.name;
      EXPECT_EQ(make_codec(c.name)->name(), c.shorthand_for);
    }
  }
  EXPECT_EQ(find_codec("fp3"), nullptr);
}

TEST(CodecTraits, UnknownNamesAndBadSizingsAreRefusedNamingTheProblem) {
  const std::string msg = testing::invalid_argument_message([] { codec_is_sparse("fp3"); });
  EXPECT_NE(msg.find("unknown codec 'fp3'"), std::string::npos) << msg;
  for (const auto& n : codec_names()) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  EXPECT_THROW(codec_encoded_bytes("int8", -1), std::invalid_argument);
  CodecSizing bad;
  bad.block = 0;
  EXPECT_THROW(codec_encoded_bytes("int8", 10, bad), std::invalid_argument);
  bad = CodecSizing();
  bad.topk_density = 0;
  EXPECT_THROW(codec_encoded_bytes("topk", 10, bad), std::invalid_argument);
  bad = CodecSizing();
  bad.topk_segments = {4, 5};
  const std::string sum = testing::invalid_argument_message([&] { codec_encoded_bytes("topk", 10, bad); });
  EXPECT_NE(sum.find("add up to 9"), std::string::npos) << sum;
}

}  // namespace
}  // namespace atl
