// The copy-free causal attention against the unfused path it replaced (heads
// copied into a (B * n_head, T, hs) batch, at::bmm, softmax, at::bmm, heads
// copied back), over every GPT shape the presets use.
#include "model/causal_attention.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <tuple>

#include "atoll/setup.h"
#include "model/precision.h"
#include "train/threads.h"

using namespace atl;

namespace {

// (n_embd, n_head, block_size) of the default GPT and of every shipped preset.
std::set<std::tuple<int64_t, int64_t, int64_t>> preset_shapes() {
  const ModelConfig d;
  std::set<std::tuple<int64_t, int64_t, int64_t>> shapes = {{d.n_embd, d.n_head, d.block_size}};
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ATOLL_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".toml") continue;
    const Config c = load_config(entry.path().string(), {}, OverrideCheck::kAnyMethod);
    if (c.model.kind == "gpt") shapes.insert({c.model.n_embd, c.model.n_head, c.model.block_size});
  }
  return shapes;
}

// The unfused path, as GPT's block computed it before.
at::Tensor unfused_attention(const at::Tensor& qkv, int64_t n_head, const at::Tensor& mask, double dropout,
                             bool training) {
  const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
  auto qkv3 = qkv.split(C, 2);
  auto heads = [&](const at::Tensor& t) { return t.view({B, T, n_head, hs}).transpose(1, 2); };
  auto batched = [&](const at::Tensor& t) { return t.reshape({B * n_head, t.size(2), t.size(3)}); };
  at::Tensor q = heads(qkv3[0]), k = heads(qkv3[1]), v = heads(qkv3[2]);
  at::Tensor att =
      at::bmm(batched(q), batched(k.transpose(-2, -1))).view({B, n_head, T, T}).mul_(1.0 / std::sqrt(double(hs)));
  att = att.masked_fill_(mask, -std::numeric_limits<float>::infinity()).softmax(-1, at::kFloat);
  if (dropout > 0) att = at::dropout(att, dropout, training);
  return at::bmm(batched(att.to(qkv.scalar_type())), batched(v))
      .view({B, n_head, T, hs})
      .transpose(1, 2)
      .contiguous()
      .view({B, T, C});
}

struct Result {
  at::Tensor y, grad;
};

Result run(bool fused, const at::Tensor& qkv0, const at::Tensor& gy, int64_t n_head, double dropout,
           at::ScalarType dtype) {
  const int64_t T = qkv0.size(1);
  const at::Tensor mask = at::ones({T, T}, at::kBool).triu(1);
  at::Tensor qkv = qkv0.to(dtype).clone().requires_grad_(true);  // a leaf of its own
  at::manual_seed(7);                                            // dropout's draws
  at::Tensor y =
      fused ? causal_attention(qkv, n_head, dropout, true) : unfused_attention(qkv, n_head, mask, dropout, true);
  y.backward(gy.to(dtype));
  return {y.detach().to(at::kFloat), qkv.grad().to(at::kFloat)};
}

// fp32: every element within tol of the reference.
void expect_close(const Result& got, const Result& want, double tol, const std::string& what) {
  EXPECT_TRUE(at::allclose(got.y, want.y, tol, tol))
      << what << ": output, max diff " << (got.y - want.y).abs().max().item<double>();
  EXPECT_TRUE(at::allclose(got.grad, want.grad, tol, tol))
      << what << ": gradient, max diff " << (got.grad - want.grad).abs().max().item<double>();
}

// |got - want| / |want| in the Frobenius norm, of the output and of the
// gradient. bf16 rounds each value to 8 significant bits, so single elements
// stray by a percent or more where the tensor as a whole does not.
std::pair<double, double> relative_errors(const Result& got, const Result& want) {
  auto error = [](const at::Tensor& g, const at::Tensor& w) {
    return (g - w).norm().item<double>() / w.norm().item<double>();
  };
  return {error(got.y, want.y), error(got.grad, want.grad)};
}

}  // namespace

// With one BLAS thread the fused kernel issues the unfused path's per-matrix
// products on the same values (only the row strides differ), so in fp32 its
// output and gradient are the unfused ones bit for bit; with two threads
// (each head's batch split across them) they agree to 1e-6.
TEST(CausalAttention, Fp32EqualsTheUnfusedPathOnEveryPresetShape) {
  for (const auto& [C, n_head, T] : preset_shapes()) {
    const std::string what = "C=" + std::to_string(C) + " heads=" + std::to_string(n_head) + " T=" + std::to_string(T);
    at::Generator gen = at::detail::createCPUGenerator(uint64_t(C * 1000 + T));
    const at::Tensor qkv = at::randn({4, T, 3 * C}, gen), gy = at::randn({4, T, C}, gen);
    for (int threads : {1, 2}) {
      set_compute_threads(threads);
      const Result want = run(false, qkv, gy, n_head, 0, at::kFloat), got = run(true, qkv, gy, n_head, 0, at::kFloat);
      if (threads == 1) {
        EXPECT_TRUE(at::equal(got.y, want.y)) << what;
        EXPECT_TRUE(at::equal(got.grad, want.grad)) << what;
      } else {
        expect_close(got, want, 1e-6, what + ", 2 threads");
      }
    }
  }
  set_compute_threads(available_cores());
}

// Dropout draws its keep mask in the unfused path's order, so a seeded run
// drops the same weights.
TEST(CausalAttention, DropoutDropsTheWeightsTheUnfusedPathDrops) {
  set_compute_threads(1);
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor qkv = at::randn({2, 64, 3 * 64}, gen), gy = at::randn({2, 64, 64}, gen);
  const Result want = run(false, qkv, gy, 4, 0.1, at::kFloat), got = run(true, qkv, gy, 4, 0.1, at::kFloat);
  expect_close(got, want, 1e-6, "dropout 0.1");
  const Result none = run(true, qkv, gy, 4, 0, at::kFloat);
  EXPECT_FALSE(at::allclose(got.y, none.y, 1e-3, 1e-3)) << "dropout changed nothing";
  set_compute_threads(available_cores());
}

// Where oneDNN multiplies bf16 (fp32 accumulation), the fused and the
// unfused bf16 paths agree to 1e-2.
TEST(CausalAttention, Bf16AgreesWithTheUnfusedPathToOnePercentWhereBf16IsNative) {
  if (!bf16_unavailable_reason(this_cpu_bf16_features()).empty())
    GTEST_SKIP() << bf16_unavailable_reason(this_cpu_bf16_features());
  for (const auto& [C, n_head, T] : preset_shapes()) {
    const std::string what = "C=" + std::to_string(C) + " heads=" + std::to_string(n_head) + " T=" + std::to_string(T);
    at::Generator gen = at::detail::createCPUGenerator(uint64_t(C * 1000 + T));
    const at::Tensor qkv = at::randn({4, T, 3 * C}, gen), gy = at::randn({4, T, C}, gen);
    const auto [output, gradient] =
        relative_errors(run(true, qkv, gy, n_head, 0, at::kBFloat16), run(false, qkv, gy, n_head, 0, at::kBFloat16));
    EXPECT_LE(output, 1e-2) << what;
    EXPECT_LE(gradient, 1e-2) << what;
  }
}

// On every CPU (elsewhere bf16 runs in ATen's own loops, which round partial
// sums to bf16: 1-2% from fp32 for both paths), the fused bf16 path is as
// close to the fp32 result as the unfused one.
TEST(CausalAttention, Bf16IsAsCloseToFp32AsTheUnfusedPath) {
  set_compute_threads(1);
  for (const auto& [C, n_head, T] : preset_shapes()) {
    const std::string what = "C=" + std::to_string(C) + " heads=" + std::to_string(n_head) + " T=" + std::to_string(T);
    at::Generator gen = at::detail::createCPUGenerator(uint64_t(C * 1000 + T));
    const at::Tensor qkv = at::randn({4, T, 3 * C}, gen), gy = at::randn({4, T, C}, gen);
    const Result exact = run(false, qkv, gy, n_head, 0, at::kFloat);
    const auto fused = relative_errors(run(true, qkv, gy, n_head, 0, at::kBFloat16), exact);
    const auto unfused = relative_errors(run(false, qkv, gy, n_head, 0, at::kBFloat16), exact);
    EXPECT_LE(fused.first, 1.1 * unfused.first + 1e-3) << what << ": output";
    EXPECT_LE(fused.second, 1.1 * unfused.second + 1e-3) << what << ": gradient";
    EXPECT_LE(std::max(fused.first, fused.second), 2e-2) << what;
  }
  set_compute_threads(available_cores());
}

// Evaluation runs the forward in inference mode, on tensors autograd never sees.
TEST(CausalAttention, RunsInInferenceMode) {
  at::Generator gen = at::detail::createCPUGenerator(9);
  const at::Tensor qkv = at::randn({2, 16, 3 * 32}, gen);
  const at::Tensor mask = at::ones({16, 16}, at::kBool).triu(1);
  at::Tensor y;
  {
    c10::InferenceMode inference;
    y = causal_attention(qkv, 2, 0, false);
  }
  EXPECT_TRUE(at::equal(y, unfused_attention(qkv, 2, mask, 0, false)));
}
