// TorchScript modules for the tests, compiled from TorchScript source in C++
// (torch::jit::Module::define), so the tests need no Python.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <string>

#include "atoll/model.h"

namespace atl {

// A submodule holding a Linear layer's weight (out, in) and bias (out).
inline torch::jit::Module jit_linear(const std::string& cls, const at::Tensor& weight, const at::Tensor& bias) {
  torch::jit::Module m("__torch__." + cls);
  m.register_parameter("weight", weight, false);
  m.register_parameter("bias", bias, false);
  return m;
}

// The built-in MNIST MLP (src/model/mnist_models.cpp) with `mlp`'s weights,
// written the way PyTorch's nn.Linear computes (addmm with the bias):
// forward(images) -> logits, scored by model.loss = cross_entropy.
inline void save_mlp_module(Model& mlp, const std::string& path) {
  torch::jit::Module m("__torch__.Mlp");
  for (const char* name : {"fc1", "fc2", "fc3"}) {
    const std::string n(name);
    m.register_module(n, jit_linear("Linear_" + n, mlp.named_parameters()[n + ".weight"].detach().clone(),
                                    mlp.named_parameters()[n + ".bias"].detach().clone()));
  }
  m.define(R"(
def forward(self, x):
    h = x.reshape([x.size(0), 784])
    h = torch.relu(torch.addmm(self.fc1.bias, h, self.fc1.weight.t()))
    h = torch.relu(torch.addmm(self.fc2.bias, h, self.fc2.weight.t()))
    return torch.addmm(self.fc3.bias, h, self.fc3.weight.t())
)");
  m.save(path);
}

// A small language model for token data (B, T) -> logits (B, T, V):
// embedding, tanh, a linear head. `tied`: the head's weight is the
// embedding itself (one parameter under two names). `own_loss`: forward
// takes the targets and returns the mean cross-entropy, and
// `example_losses` gives one loss per sequence (if `with_example_losses`).
struct TokenModuleOptions {
  int64_t vocab = 16, dim = 8;
  uint64_t seed = 3;
  bool tied = false;
  bool own_loss = false;
  bool with_example_losses = true;
};
inline void save_token_module(const std::string& path, const TokenModuleOptions& o = {}) {
  at::manual_seed(o.seed);
  const at::Tensor emb = at::randn({o.vocab, o.dim}) * 0.3;
  torch::jit::Module m("__torch__.TokenModel");
  torch::jit::Module wte("__torch__.Embedding");
  wte.register_parameter("weight", emb, false);
  m.register_module("wte", wte);
  m.register_module("head", jit_linear("Head", o.tied ? emb : at::randn({o.vocab, o.dim}) * 0.3, at::zeros({o.vocab})));
  std::string src = R"(
def logits(self, x):
    h = torch.tanh(torch.embedding(self.wte.weight, x))
    return torch.matmul(h, self.head.weight.t()) + self.head.bias
)";
  if (o.own_loss) {
    src += R"(
def forward(self, x, y):
    lp = torch.log_softmax(self.logits(x), -1)
    return -torch.gather(lp, -1, y.unsqueeze(-1)).mean()
)";
    if (o.with_example_losses)
      src += R"(
def example_losses(self, x, y):
    lp = torch.log_softmax(self.logits(x), -1)
    return -torch.gather(lp, -1, y.unsqueeze(-1)).reshape([x.size(0), -1]).mean(1)
)";
  } else {
    src += R"(
def forward(self, x):
    return self.logits(x)
)";
  }
  m.define(src);  // o.tied: the same tensor in both places, as PyTorch's weight tying leaves it
  m.save(path);
}

}  // namespace atl
