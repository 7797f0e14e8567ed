// Streaming DiLoCo: fragments, the staggered schedule, overlap, the
// equivalence with DiLoCo, and eager updates (streaming.eager).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "atoll/comm.h"
#include "atoll/setup.h"
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

// ---------------------------------------------------------------------------
// Eager updates (streaming.eager; arXiv 2502.12996)

Config eager_config(int64_t h, int64_t fragment_blocks, double alpha, const std::string& codec = "fp32") {
  Config cfg = streaming_config(h, fragment_blocks, 0, alpha, codec);
  cfg.streaming.eager = true;
  return cfg;
}

TEST(StreamingEager, OneWorkerEqualsBlockingStreamingBitwise) {
  // N = 1: mean_prev is the worker's own last payload, so the estimate
  // mean_prev + (Delta - Delta_prev) / 1 is this round's Delta, as tau = 0 has it.
  auto a = run(eager_config(4, 1, 0.5), 1, 14, 0.01, own_data);  // F = 2, the first round included
  auto b = run(streaming_config(4, 1, 0, 0.5), 1, 14, 0.01, own_data);
  EXPECT_TRUE(bitwise_equal(a[0], b[0]));
}

TEST(StreamingEager, EachFragmentStartsOneAllReducePerRoundAtItsSyncStep) {
  std::vector<Ledger> ledgers;
  RunOptions o;
  o.ledgers = &ledgers;
  run_with(eager_config(4, 1, 0.5), 2, 16, 0.01, own_data, o);  // F = 2
  for (const Ledger& l : ledgers) {
    std::map<std::string, std::vector<int64_t>> steps;
    for (const auto& e : l.entries()) {
      EXPECT_EQ(e.op, CommOp::AllReduce) << e.tag;
      steps[e.tag].push_back(e.step);
    }
    ASSERT_EQ(steps.size(), 2u);
    // At the sync steps o_p + kH (o_0 = 1, o_1 = 3), none tau steps early:
    // each waits for the one started H steps before.
    EXPECT_EQ(steps["fragment/0"], (std::vector<int64_t>{1, 5, 9, 13}));
    EXPECT_EQ(steps["fragment/1"], (std::vector<int64_t>{3, 7, 11, 15}));
  }
}

// Every worker's parameters and theta_g after each step (trace[r][t][k]).
struct EagerTrace {
  History params, global;
};

EagerTrace run_tracing_global(const Config& cfg, int64_t n, int64_t steps, double lr) {
  InProcessGroup group(n);
  std::vector<Worker> workers(n, Worker(at::kDouble));
  for (auto& w : workers)
    for (auto& p : w.params) p = p.detach().clone().requires_grad_();
  EagerTrace trace;
  trace.params.assign(n, {});
  trace.global.assign(n, {});
  on_threads(group, [&](int64_t r, Communicator& comm) {
    auto strategy = make_strategy(cfg, workers[r].params, comm);
    for (int64_t t = 0; t < steps; ++t) {
      comm.set_step(t);
      workers[r].backward(own_data(r), t);
      strategy->step(t, lr);
      std::vector<at::Tensor> params, global;
      for (auto& p : workers[r].params) params.push_back(p.detach().clone());
      for (auto& g : *strategy->global_params()) global.push_back(g.clone());
      trace.params[r].push_back(params);
      trace.global[r].push_back(global);
    }
  });
  return trace;
}

TEST(StreamingEager, EachWorkerStepsWithItsOwnFreshOuterGradientAndTheOthersOfTheRoundBefore) {
  // alpha = 1 leaves the workers' own values alone, so they train as if
  // alone and their trajectories are known; no momentum: theta_g_i moves by
  // -lr_out Delta~_i, with Delta~_i = (Delta_i^(r) + sum_{j != i} Delta_j^(r-1)) / N
  // and nothing before the first round.
  Config cfg = eager_config(2, 2, 1.0);  // one fragment of both tensors, syncs after steps 1, 3, 5, 7
  cfg.diloco.outer_momentum = 0;
  const int64_t n = 3, steps = 8;
  const double lr_out = cfg.diloco.outer_lr;
  const EagerTrace got = run_tracing_global(cfg, n, steps, 0.01);
  // Each worker's theta_g from the common start, and its last outer gradient.
  std::vector<std::vector<at::Tensor>> global, previous(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    global.push_back({});
    for (auto& p : Worker(at::kDouble).params) global.back().push_back(p.detach().clone());
  }
  for (int64_t t = 0; t < steps; ++t) {
    if (t % 2 == 1) {
      std::vector<std::vector<at::Tensor>> fresh(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        for (size_t k = 0; k < 2; ++k) fresh[i].push_back(global[i][k] - got.params[i][t][k]);
      for (int64_t i = 0; i < n; ++i)
        for (size_t k = 0; k < 2; ++k) {
          at::Tensor estimate = fresh[i][k].clone();
          for (int64_t j = 0; j < n; ++j)
            if (j != i && !previous[j].empty()) estimate += previous[j][k];
          global[i][k] -= lr_out * estimate / double(n);
        }
      previous = fresh;
    }
    for (int64_t i = 0; i < n; ++i)
      EXPECT_LT(max_abs_diff(got.global[i][t], global[i]), 1e-12) << "worker " << i << " after step " << t;
  }
  // So the workers' theta_g differ (by lr_out / N times their outer gradients' differences).
  EXPECT_GT(max_abs_diff(got.global[0].back(), got.global[1].back()), 1e-6);
  EXPECT_GT(max_abs_diff(got.global[1].back(), got.global[2].back()), 1e-6);
}

TEST(StreamingEager, AGlobalModelPerWorkerSoTheDivergenceCheckSkipsIt) {
  InProcessGroup group(1);
  auto params = Worker(at::kDouble).params;
  EXPECT_FALSE(make_strategy(eager_config(4, 1, 0.5), params, group.rank(0))->shared_global());
  EXPECT_TRUE(make_strategy(streaming_config(4, 1, 1, 0.5), params, group.rank(0))->shared_global());
}

TEST(StreamingEager, AnOverlapIsRefusedSayingWhatIsAllowed) {
  auto joined_lines = [](const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  };
  Config c;
  c.strategy.name = "streaming";
  c.strategy.workers = 2;
  c.streaming.eager = true;
  ASSERT_EQ(c.streaming.overlap, 1);  // the default
  const auto e = validate(c);
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_NE(e[0].find("streaming.eager = true overlaps each fragment's all-reduce with the whole next round (H "
                      "steps), so streaming.overlap (tau) does not apply: set streaming.overlap = 0 (it is 1), or "
                      "streaming.eager = false to overlap tau steps"),
            std::string::npos)
      << e[0];
  c.streaming.overlap = 0;
  EXPECT_TRUE(validate(c).empty()) << joined_lines(validate(c));
  // Another method does not read [streaming]: its keys there are not checked against each other.
  c.streaming.overlap = 1;
  c.strategy.name = "diloco";
  EXPECT_TRUE(validate(c).empty()) << joined_lines(validate(c));
}

}  // namespace
}  // namespace atl
