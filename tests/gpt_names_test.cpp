// The built-in GPT's parameter names <-> nanoGPT's, and the nanoGPT-named
// export (state_dict order, the tied lm_head).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "atoll/model.h"
#include "model/gpt_names.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace atl {
namespace {

using NamedParams = std::vector<std::pair<std::string, at::Tensor>>;

NamedParams gpt_params(int64_t n_layer, bool bias) {
  ModelConfig c;
  c.kind = "gpt";
  c.n_layer = n_layer;
  c.n_head = 2;
  c.n_embd = 8;
  c.block_size = 6;
  c.bias = bias;
  auto model = make_model(c, /*vocab_size=*/11, /*seed=*/1);
  NamedParams out;
  for (const auto& item : model->named_parameters()) out.emplace_back(item.key(), item.value());
  return out;
}

// nanoGPT's state_dict keys for 2 layers, in its order (model.py: GPT's
// transformer = {wte, wpe, drop, h, ln_f}, then lm_head; Block's ln_1, attn,
// ln_2, mlp), less the attention-mask buffers of PyTorch < 2.
std::vector<std::string> nanogpt_keys(bool bias) {
  std::vector<std::string> out = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (int l = 0; l < 2; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    for (const char* m : {"ln_1", "attn.c_attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"}) {
      out.push_back(h + m + ".weight");
      if (bias) out.push_back(h + m + ".bias");
    }
  }
  out.push_back("transformer.ln_f.weight");
  if (bias) out.push_back("transformer.ln_f.bias");
  out.push_back("lm_head.weight");
  return out;
}

TEST(GptNames, EveryParameterRoundTrips) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    const NamedParams params = gpt_params(2, bias);
    ASSERT_EQ(params.size(), bias ? 2u + 2 * 12 + 2 : 2u + 2 * 6 + 1);
    std::set<std::string> nanogpt;
    for (const auto& [name, tensor] : params) {
      const std::string n = nanogpt_name(name);
      EXPECT_EQ(atoll_gpt_name(n), name);
      nanogpt.insert(n);
    }
    std::vector<std::string> expected = nanogpt_keys(bias);
    expected.pop_back();  // lm_head.weight is wte
    EXPECT_EQ(nanogpt, std::set<std::string>(expected.begin(), expected.end()));
  }
  EXPECT_EQ(nanogpt_name("h12.attn_proj.bias"), "transformer.h.12.attn.c_proj.bias");
  EXPECT_EQ(nanogpt_name("h3.mlp_proj.weight"), "transformer.h.3.mlp.c_proj.weight");
  EXPECT_EQ(atoll_gpt_name("transformer.h.0.mlp.c_fc.weight"), "h0.c_fc.weight");
}

TEST(GptNames, UnknownNamesThrow) {
  for (const char* name :
       {"", "wte.weight", "transformer.wte.weight", "lm_head.weight", "h", "h0", "h0.", "h.0.ln_1.weight",
        "h01.ln_1.weight", "h-1.ln_1.weight", "h0.ln_1", "h0.ln_1.weight.x", "h0.attn.c_attn.weight",
        "h0.c_proj.weight", "ln_f.weight ", "H0.ln_1.weight", "h1234567890.ln_1.weight"}) {
    SCOPED_TRACE(name);
    EXPECT_NE(testing::invalid_argument_message([&] { nanogpt_name(name); }).find("not a parameter name"),
              std::string::npos);
  }
  for (const char* name : {"", "wte", "h0.ln_1.weight", "transformer.wte", "transformer.h.0.c_attn.weight",
                           "transformer.h.00.ln_1.weight", "transformer.h.0.attn.bias", "transformer.h.0.mlp.c_proj",
                           "model.transformer.wte.weight", "transformer.h.x.ln_1.weight"}) {
    SCOPED_TRACE(name);
    EXPECT_NE(testing::invalid_argument_message([&] { atoll_gpt_name(name); }).find("not a parameter name"),
              std::string::npos);
  }
  EXPECT_NE(testing::invalid_argument_message([&] {
              atoll_gpt_name("lm_head.weight");
            }).find("tied to transformer.wte.weight"),
            std::string::npos);
}

TEST(GptNames, ExportIsInStateDictOrderWithTheHeadACopyOfWte) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    NamedParams params = gpt_params(2, bias);
    std::reverse(params.begin(), params.end());  // the order given does not matter
    const std::vector<NamedTensor> out = nanogpt_tensors(params);
    std::vector<std::string> names;
    for (const auto& t : out) names.push_back(t.name);
    EXPECT_EQ(names, nanogpt_keys(bias));
    for (const auto& [name, tensor] : params) {
      const std::string n = nanogpt_name(name);
      const auto it = std::find_if(out.begin(), out.end(), [&](const NamedTensor& t) { return t.name == n; });
      ASSERT_NE(it, out.end()) << n;
      EXPECT_TRUE(it->tensor.is_same(tensor) || it->tensor.data_ptr() == tensor.data_ptr()) << n;
      EXPECT_FALSE(it->tensor.requires_grad()) << n;
    }
    const at::Tensor& wte = out.front().tensor;
    const at::Tensor& head = out.back().tensor;
    EXPECT_EQ(out.back().name, "lm_head.weight");
    EXPECT_TRUE(at::equal(head, wte));
    EXPECT_NE(head.data_ptr(), wte.data_ptr());  // a copy: the file has no shared tensors
  }
}

TEST(GptNames, ExportRefusesWhatIsNotAWholeGpt) {
  const NamedParams whole = gpt_params(2, true);
  NamedParams missing = whole;
  missing.erase(missing.begin() + 5);  // one of layer 0's tensors
  EXPECT_NE(testing::invalid_argument_message([&] {
              nanogpt_tensors(missing);
            }).find("not a whole GPT (2 layers, with biases): missing " + whole[5].first),
            std::string::npos);
  NamedParams twice = whole;
  twice.push_back(whole[0]);
  EXPECT_NE(testing::invalid_argument_message([&] { nanogpt_tensors(twice); }).find("'wte' appears twice"),
            std::string::npos);
  NamedParams foreign = whole;
  foreign.emplace_back("fc1.weight", at::ones({2}));
  EXPECT_NE(
      testing::invalid_argument_message([&] { nanogpt_tensors(foreign); }).find("'fc1.weight' is not a parameter name"),
      std::string::npos);
  // One bias without the others is no GPT either.
  NamedParams mixed = gpt_params(1, false);
  mixed.emplace_back("ln_f.bias", at::zeros({8}));
  EXPECT_NE(testing::invalid_argument_message([&] { nanogpt_tensors(mixed); }).find("missing h0.ln_1.bias"),
            std::string::npos);
}

TEST(GptNames, ExportWritesAndReadsBack) {
  testing::TempDir dir;
  const NamedParams params = gpt_params(1, true);
  write_safetensors(dir / "gpt.safetensors", nanogpt_tensors(params), {{"format", "pt"}});
  const SafetensorsFile back = read_safetensors(dir / "gpt.safetensors");
  ASSERT_EQ(back.tensors.size(), params.size() + 1);
  EXPECT_EQ(back.tensors.back().name, "lm_head.weight");
  for (const auto& [name, tensor] : params) {
    const std::string n = nanogpt_name(name);
    const auto it =
        std::find_if(back.tensors.begin(), back.tensors.end(), [&](const NamedTensor& t) { return t.name == n; });
    ASSERT_NE(it, back.tensors.end()) << n;
    EXPECT_TRUE(at::equal(it->tensor, tensor)) << n;
  }
}

}  // namespace
}  // namespace atl
