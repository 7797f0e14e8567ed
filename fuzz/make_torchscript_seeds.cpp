// Writes the seed corpus of fuzz_torchscript: small TorchScript modules
// compiled from TorchScript source (no Python needed), one per contract:
//   logits       forward(x) -> logits, scored by cross-entropy
//   own_loss     forward(x, y) -> mean loss, with example_losses
//   tied         a head sharing the first layer's weight
//   buffer       a constant buffer next to the parameters
//   cmake --build build-fuzz --target make_torchscript_seeds  (not built by default)
//   build-fuzz/make_torchscript_seeds fuzz/corpus/fuzz_torchscript
#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_torchscript_seeds OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path out(argv[1]);
  std::filesystem::create_directories(out);
  at::manual_seed(1);
  const std::string logits = "def forward(self, x):\n    return torch.matmul(x, self.w)\n";
  {
    torch::jit::Module m("__torch__.Logits");
    m.register_parameter("w", at::randn({4, 4}), false);
    m.define(logits);
    m.save((out / "logits").string());
  }
  {
    torch::jit::Module m("__torch__.OwnLoss");
    m.register_parameter("w", at::randn({4, 4}), false);
    m.define(R"(
def forward(self, x, y):
    return -torch.gather(torch.log_softmax(torch.matmul(x, self.w), -1), 1, y.unsqueeze(1)).mean()
def example_losses(self, x, y):
    return -torch.gather(torch.log_softmax(torch.matmul(x, self.w), -1), 1, y.unsqueeze(1)).squeeze(1)
)");
    m.save((out / "own_loss").string());
  }
  {
    const at::Tensor shared = at::randn({4, 4});
    torch::jit::Module m("__torch__.Tied");
    torch::jit::Module first("__torch__.First"), head("__torch__.Head");
    first.register_parameter("weight", shared, false);
    head.register_parameter("weight", shared, false);
    m.register_module("first", first);
    m.register_module("head", head);
    m.define(
        "def forward(self, x):\n    return torch.matmul(torch.tanh(torch.matmul(x, self.first.weight)), "
        "self.head.weight.t())\n");
    m.save((out / "tied").string());
  }
  {
    torch::jit::Module m("__torch__.Buffer");
    m.register_parameter("w", at::randn({4, 4}), false);
    m.register_buffer("scale", at::full({4}, 0.5));
    m.define("def forward(self, x):\n    return torch.matmul(x, self.w) * self.scale\n");
    m.save((out / "buffer").string());
  }
  std::printf("wrote 4 seeds to %s\n", out.string().c_str());
  return 0;
}
