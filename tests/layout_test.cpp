// A resumed run and a real rank hold the same values as the uninterrupted
// simulation, but in tensors allocated elsewhere: loaded from a checkpoint,
// received from a peer, built by a module loaded afresh. Bitwise equality
// must not depend on where those tensors lie in memory. Issue 34 was found
// only on a CPU whose kernels round some layouts differently; these tests
// move every parameter and every optimizer moment to storage that starts
// 4 bytes past an alignment boundary and demand the same bits after several
// steps, so an alignment-dependent kernel (a SIMD loop that peels to an
// aligned address, say) fails here on any CPU.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/data.h"
#include "atoll/model.h"
#include "atoll/state.h"
#include "strategy/inner_optimizer.h"
#include "test_util.h"
#include "tiny_data.h"
#include "torchscript_modules.h"
#include "train/gradients.h"

namespace atl {
namespace {

// The same values in storage that starts one element (4 bytes) past a
// freshly allocated buffer's start, which the allocator aligns to 64.
at::Tensor misaligned_copy(const at::Tensor& t) {
  at::Tensor buffer = at::empty({t.numel() + 16}, t.options());
  at::Tensor moved = buffer.narrow(0, 1, t.numel()).view(t.sizes());
  moved.copy_(t);
  EXPECT_NE(reinterpret_cast<uintptr_t>(moved.data_ptr()) % 64, 0u);
  return moved;
}

void misalign_parameters(const std::vector<at::Tensor>& params) {
  at::NoGradGuard no_grad;
  for (auto p : params) p.set_data(misaligned_copy(p));
}

// A "load" that puts every tensor of a state walk into misaligned storage
// in place (Tensor::set_ keeps the TensorImpl that the owner holds) and
// leaves every number as it is.
class Misaligner final : public StateVisitor {
 public:
  bool loading() const override { return true; }
  void tensor(const std::string&, at::Tensor& t) override {
    if (!t.defined()) return;
    const at::Tensor moved = misaligned_copy(t);
    t.set_(moved.storage(), moved.storage_offset(), moved.sizes(), moved.strides());
    ++moved_;
  }
  void integer(const std::string&, int64_t&) override {}
  void real(const std::string&, double&) override {}
  void text(const std::string&, std::string&) override {}
  int moved() const { return moved_; }

 private:
  int moved_ = 0;
};

// Parameters after `steps` AdamW steps on fixed batches; with `misalign`,
// the parameters are moved before the first step and the moments after it
// (when AdamW has made them), as a resume reloads both.
at::Tensor train_steps(const ModelConfig& model_cfg, int64_t vocab, bool misalign, int steps) {
  auto model = make_model(model_cfg, vocab, 7, 16);
  std::vector<at::Tensor> params = model->parameters();
  if (misalign) misalign_parameters(params);
  OptimConfig optim;
  optim.lr = 1e-2;
  InnerOptimizer opt(optim, params);
  at::manual_seed(3);
  const int64_t v = vocab > 0 ? vocab : 24;
  for (int k = 0; k < steps; ++k) {
    const at::Tensor x = at::randint(0, v, {4, 16}, at::kLong), y = at::randint(0, v, {4, 16}, at::kLong);
    forward_backward(*model, params, {x, y}, "fp32", 1);
    opt.step(optim.lr);
    if (misalign && k == 0) {
      Misaligner m;
      opt.visit_state(m);
      EXPECT_EQ(m.moved(), 2 * static_cast<int>(params.size())) << "AdamW's two moments per parameter";
    }
  }
  std::vector<at::Tensor> flat;
  for (const auto& p : params) flat.push_back(p.detach().reshape({-1}).clone());
  return at::cat(flat);
}

TEST(BitwiseLayout, BuiltInGptGivesTheSameBitsWithEveryTensorMisaligned) {
  Config cfg = tiny_config("single", 1);
  const int64_t vocab = load_token_data(tiny_text_dir()).vocab_size;
  const at::Tensor aligned = train_steps(cfg.model, vocab, false, 4), moved = train_steps(cfg.model, vocab, true, 4);
  EXPECT_TRUE(at::equal(aligned, moved)) << "largest difference " << (aligned - moved).abs().max().item<double>();
}

TEST(BitwiseLayout, TorchScriptModuleGivesTheSameBitsWithEveryTensorMisaligned) {
  testing::TempDir tmp;
  TokenModuleOptions o;
  o.vocab = load_token_data(tiny_text_dir()).vocab_size;
  ModelConfig model;
  model.kind = "torchscript";
  model.path = tmp.path("token.pt");
  save_token_module(model.path, o);
  const at::Tensor aligned = train_steps(model, o.vocab, false, 4), moved = train_steps(model, o.vocab, true, 4);
  EXPECT_TRUE(at::equal(aligned, moved)) << "largest difference " << (aligned - moved).abs().max().item<double>();
}

}  // namespace
}  // namespace atl
