// The inner AdamW on flat buffers takes LibTorch's AdamW's steps to the bit:
// clipping on, matrices decayed and vectors not, a step where a parameter
// has no gradient (LibTorch skips it and its step count), the learning
// rate changing every step, and sizes that end off the vector width.
#include <gtest/gtest.h>

// torch/types.h first: clip_grad.h uses torch::Tensor without including it.
#include <torch/types.h>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "strategy/inner_optimizer.h"

namespace atl {
namespace {

std::vector<at::Tensor> make_params(uint64_t seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> out;
  for (auto shape : std::vector<std::vector<int64_t>>{{37, 19}, {19}, {64, 64}, {5}, {3, 7, 2}, {1}})
    out.push_back(at::randn(shape).set_requires_grad(true));
  return out;
}

// What autograd does: add into a present gradient, else take a copy.
void give_gradient(at::Tensor p, const at::Tensor& g) {
  if (p.grad().defined()) {
    p.mutable_grad().add_(g);
  } else {
    p.mutable_grad() = g.clone();
  }
}

TEST(InnerOptimizer, FlatAdamWEqualsLibTorchsAdamWToTheBit) {
  OptimConfig cfg;
  cfg.name = "adamw";
  cfg.grad_clip = 0.5;  // below the gradients' norm, so every step clips
  cfg.weight_decay = 0.1;
  const auto ours = make_params(3), theirs = make_params(3);
  InnerOptimizer flat(cfg, ours);
  // The reference: LibTorch's AdamW as atoll used it before, groups and all.
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& p : theirs) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(wd).eps(1e-8));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(cfg.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(cfg.lr));

  at::manual_seed(11);
  for (int step = 0; step < 25; ++step) {
    const double lr = 1e-3 * (1 + step % 4);
    for (size_t i = 0; i < ours.size(); ++i) {
      if (step == 6 && i == 1) {  // no gradient this step, in both
        at::Tensor a = ours[i], b = theirs[i];
        a.mutable_grad() = at::Tensor();
        b.mutable_grad() = at::Tensor();
        continue;
      }
      const at::Tensor g = at::randn(ours[i].sizes()) * double(1 + i);
      give_gradient(ours[i], g);
      give_gradient(theirs[i], g);
    }
    flat.step(lr);
    {
      at::NoGradGuard no_grad;
      torch::nn::utils::clip_grad_norm_(theirs, cfg.grad_clip);
    }
    for (auto& group : reference.param_groups()) group.options().set_lr(lr);
    reference.step();
    reference.zero_grad();
    for (size_t i = 0; i < ours.size(); ++i)
      ASSERT_TRUE(at::equal(ours[i], theirs[i])) << "parameter " << i << " differs after step " << step;
  }
}

// Muon (optim.name = muon): with mu = 0 and no weight decay one step moves a
// matrix by -lr * 0.2 * sqrt(max(rows, cols)) * O, where O, the Newton-Schulz
// image of the gradient, has the gradient's singular vectors and singular
// values near 1 (the quintic iteration leaves them in about [0.7, 1.2]).
TEST(InnerOptimizer, MuonMovesAMatrixAlongTheGradientsOrthogonalFactor) {
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{12, 5}, {5, 12}, {8, 8}}) {
    at::manual_seed(3);
    at::Tensor p = at::randn(shape, at::kDouble).set_requires_grad(true);
    const at::Tensor before = p.detach().clone();
    const at::Tensor g = at::randn(shape, at::kDouble);
    OptimConfig cfg;
    cfg.name = "muon";
    cfg.muon_momentum = 0;
    cfg.weight_decay = 0;
    cfg.grad_clip = 0;
    InnerOptimizer opt(cfg, {p});
    ASSERT_TRUE(opt.on_muon(0));
    give_gradient(p, g);
    const double lr = 0.01;
    opt.step(lr);
    const double scale = 0.2 * std::sqrt(double(std::max(shape[0], shape[1])));
    const at::Tensor o = (before - p.detach()) / (lr * scale);
    const auto svd_g = at::linalg_svd(g, /*full_matrices=*/false);
    const at::Tensor u = std::get<0>(svd_g), v = std::get<2>(svd_g).t();
    const at::Tensor inner = u.t().mm(o).mm(v);  // diagonal when O shares g's singular vectors
    const at::Tensor diag = inner.diagonal();
    EXPECT_LT((inner - at::diag(diag)).abs().max().item<double>(), 1e-9);
    EXPECT_GT(diag.min().item<double>(), 0.6);
    EXPECT_LT(diag.max().item<double>(), 1.25);
  }
}

// Vectors and the matrices optim.muon_exclude names (embeddings, head) take
// AdamW's step, bit for bit the step optim.name = adamw takes; the others do not.
TEST(InnerOptimizer, MuonLeavesVectorsAndExcludedMatricesOnAdamW) {
  const std::vector<std::string> names = {"wte", "b", "h0.c_fc.weight", "bias", "conv", "one"};
  auto params_for = [] { return make_params(9); };
  std::vector<at::Tensor> muon = params_for(), adamw = params_for();
  OptimConfig cfg;
  cfg.name = "muon";
  InnerOptimizer a(cfg, muon, names);
  cfg.name = "adamw";
  InnerOptimizer b(cfg, adamw, names);
  for (int step = 0; step < 3; ++step) {
    at::manual_seed(100 + step);
    for (size_t i = 0; i < muon.size(); ++i) {
      const at::Tensor g = at::randn(muon[i].sizes());
      give_gradient(muon[i], g);
      give_gradient(adamw[i], g);
    }
    a.step(1e-3);
    b.step(1e-3);
  }
  const std::vector<bool> on_muon = {false, false, true, false, true, false};  // wte excluded; 1-D on AdamW
  for (size_t i = 0; i < muon.size(); ++i) {
    EXPECT_EQ(a.on_muon(i), on_muon[i]) << names[i];
    EXPECT_EQ(at::equal(muon[i], adamw[i]), !on_muon[i]) << names[i];
  }
}

// The modelled clock charges Muon's Newton-Schulz products: per iteration
// 4 m^2 n + 2 m^3 FLOPs for an m x n matrix (m <= n), a conv weight as its
// (out, rest) matrix; by hand for 12 x 5 and 4 x (3 x 2) = 4 x 6, 5 iterations:
//   5 (4 * 25 * 12 + 2 * 125) + 5 (4 * 16 * 6 + 2 * 64) = 7,250 + 2,560.
// Vectors, excluded matrices and other optimizers cost nothing here.
TEST(InnerOptimizer, MuonsStepFlopsAreItsNewtonSchulzProducts) {
  const std::vector<at::Tensor> params = {at::zeros({12, 5}), at::zeros({7}), at::zeros({4, 3, 2}), at::zeros({9, 9})};
  const std::vector<std::string> names = {"h0.c_fc.weight", "b", "conv", "wte"};
  OptimConfig cfg;
  cfg.name = "muon";
  EXPECT_EQ(inner_step_flops(cfg, params, names), 7250 + 2560);
  cfg.name = "adamw";
  EXPECT_EQ(inner_step_flops(cfg, params, names), 0);
}

}  // namespace
}  // namespace atl
