// Streaming DiLoCo: fragments, the staggered schedule, overlap and the
// equivalence with DiLoCo.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "strategy/streaming.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

Config streaming_config(int64_t h, int64_t fragment_blocks, int64_t overlap, double alpha,
                        const std::string& codec = "fp32") {
  Config cfg = base_config("streaming", "adamw");
  cfg.diloco.inner_steps = h;
  cfg.streaming.fragment_blocks = fragment_blocks;
  cfg.streaming.overlap = overlap;
  cfg.streaming.alpha = alpha;
  cfg.streaming.codec = codec;
  return cfg;
}

std::vector<std::string> gpt_names(int layers) {
  std::vector<std::string> names = {"wte", "wpe"};
  for (int l = 0; l < layers; ++l)
    for (const char* part : {".ln_1.weight", ".attn.c_attn.weight", ".mlp.c_proj.weight"})
      names.push_back("h" + std::to_string(l) + part);
  names.push_back("ln_f.weight");
  return names;
}

TEST(Streaming, OneFragmentNoOverlapNoMergeEqualsDiLoCo) {
  Config diloco = base_config("diloco", "adamw");
  diloco.diloco.inner_steps = 4;
  auto a = run(streaming_config(4, 2, 0, 0.0), 3, 12, 0.01, own_data);  // 2 tensors, 2 per fragment
  auto b = run(diloco, 3, 12, 0.01, own_data);
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(bitwise_equal(a[w], b[w])) << "worker " << w;
}

TEST(Streaming, StridedAndSequentialFragmentsGroupTransformerBlocks) {
  const auto names = gpt_names(6);
  int64_t f = 0;
  const auto strided =
      assign_fragments(names, int64_t(names.size()), 3, "strided", StreamingConfig{}.block_pattern, &f);
  ASSERT_EQ(f, 2);
  EXPECT_EQ(strided[0], 0);      // wte with the first fragment
  EXPECT_EQ(strided[1], 0);      // wpe
  EXPECT_EQ(strided.back(), 1);  // ln_f with the last
  for (int l = 0; l < 6; ++l)
    for (int part = 0; part < 3; ++part) EXPECT_EQ(strided[2 + 3 * l + part], l % 2) << "block " << l;
  const auto sequential =
      assign_fragments(names, int64_t(names.size()), 3, "sequential", StreamingConfig{}.block_pattern, &f);
  for (int l = 0; l < 6; ++l) EXPECT_EQ(sequential[2 + 3 * l], l / 3) << "block " << l;
  // No block names: every tensor is a block.
  const auto plain = assign_fragments({}, 5, 2, "sequential", StreamingConfig{}.block_pattern, &f);
  EXPECT_EQ(f, 3);
  EXPECT_EQ(plain, (std::vector<int64_t>{0, 0, 1, 1, 2}));
}

TEST(Streaming, TheDefaultBlockPatternFindsTheBlocksOfPyTorchStyleNames) {
  // nanoGPT's names, as a TorchScript GPT has them, and a user's own pattern.
  const std::vector<std::string> nanogpt = {"transformer.wte.weight",
                                            "transformer.wpe.weight",
                                            "transformer.h.0.attn.c_attn.weight",
                                            "transformer.h.0.mlp.c_fc.weight",
                                            "transformer.h.1.attn.c_attn.weight",
                                            "transformer.h.1.mlp.c_fc.weight",
                                            "transformer.h.2.attn.c_attn.weight",
                                            "transformer.h.3.attn.c_attn.weight",
                                            "transformer.ln_f.weight"};
  int64_t f = 0;
  EXPECT_EQ(assign_fragments(nanogpt, 9, 2, "sequential", StreamingConfig{}.block_pattern, &f),
            (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(f, 2);
  const std::vector<std::string> own = {"embed.weight", "stack.0.w", "stack.1.w", "stack.2.w", "out.weight"};
  EXPECT_EQ(assign_fragments(own, 5, 1, "strided", R"(^stack\.(\d+)\.)", &f), (std::vector<int64_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(f, 3);
  EXPECT_THROW(assign_fragments(own, 5, 1, "strided", R"(^(stack)\.)", &f), std::invalid_argument);
}

TEST(Streaming, EveryFragmentSyncsExactlyOncePerHStaggeredByHOverF) {
  for (int64_t overlap : {0, 1}) {
    Ledger l;
    run(streaming_config(4, 1, overlap, 0.5), 2, 16, 0.01, own_data, at::kDouble, &l);  // F = 2
    std::map<std::string, std::vector<int64_t>> steps;
    for (const auto& e : l.entries()) steps[e.tag].push_back(e.step);
    ASSERT_EQ(steps.size(), 2u);
    // Fragment p performs after steps o_p + kH (o_0 = 1, o_1 = 3) and starts tau steps earlier.
    EXPECT_EQ(steps["fragment/0"], (std::vector<int64_t>{1 - overlap, 5 - overlap, 9 - overlap, 13 - overlap}));
    EXPECT_EQ(steps["fragment/1"], (std::vector<int64_t>{3 - overlap, 7 - overlap, 11 - overlap, 15 - overlap}));
  }
}

TEST(Streaming, Fp4PayloadsAreChargedAtTheirEncodedSize) {
  Ledger l;
  RunOptions o;
  o.in = 40;
  o.out = 25;  // 1000 + 25 parameters, one fragment each
  o.rank0_ledger = &l;
  run_with(streaming_config(4, 1, 1, 0.5, "fp4"), 2, 8, 0.01, own_data, o);
  for (const auto& e : l.entries()) {
    const double n = e.tag == "fragment/0" ? 1000 : 25;
    EXPECT_DOUBLE_EQ(e.payload_bytes, std::ceil(n / 2) + 4 * std::ceil(n / 128)) << e.tag;
  }
  EXPECT_EQ(l.ops(), 4);
}

TEST(Streaming, MergeKeepsAlphaOfTheLocalValues) {
  // alpha = 1 keeps every worker's own values: the workers never meet.
  auto a = run(streaming_config(4, 1, 0, 1.0), 2, 8, 0.01, own_data);
  Config none = base_config("sparta", "adamw");
  none.sparta.p = 0;
  auto b = run(none, 2, 8, 0.01, own_data);
  EXPECT_TRUE(bitwise_equal(a[0], b[0]));
  EXPECT_TRUE(bitwise_equal(a[1], b[1]));
  // alpha = 0 makes a fragment identical on every worker when it syncs:
  // fragment 1 (the bias) just synced after step 7; fragment 0 (the matrix)
  // synced after step 5 and trained locally since.
  auto c = run(streaming_config(4, 1, 0, 0.0), 2, 8, 0.01, own_data);
  EXPECT_TRUE(at::equal(c[0][1], c[1][1]));
  EXPECT_FALSE(at::equal(c[0][0], c[1][0]));
}

}  // namespace
}  // namespace atl
