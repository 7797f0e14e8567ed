// model.kind = torchscript: a user's TorchScript module behind the Model
// interface (contract in src/model/torchscript.h and docs/PYTORCH.md).
//
// The module's parameters are mirrored into a tree of plain torch::nn
// modules with the same names, holding the very same tensors: strategies,
// checkpoints, evaluation and export see "encoder.layers.0.weight" as they
// see a built-in model's parameters, and every in-place update reaches the
// module that computes the loss.
#include <ATen/ATen.h>
#include <ATen/core/Reduction.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "model/init.h"
#include "model/torchscript.h"
#include "model/zip_check.h"
#include "util/file_io.h"

namespace atl {
namespace {

std::string first_line(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

std::string tensor_text(const at::Tensor& t) {
  std::ostringstream o;
  o << t.sizes() << " " << t.scalar_type();
  return o.str();
}

// The graph executor's optimisations (profiling, then an optimised plan
// whose autodiff subgraphs carry the JIT's own backward formulas) change
// how a module computes after its first calls: a module loaded by a resumed
// run, a real rank, or a worker that joined later would profile again and
// run eager autograd's formulas at steps where the uninterrupted run ran
// the JIT's, whose matrix products take other operand layouts (OpenBLAS's
// AVX2 kernels round those differently). atoll runs every module's graph as
// written. The switch is thread-local in LibTorch (setGraphExecutorOptimize
// sets it for the calling thread only), so it is set around every call, on
// whichever thread makes it: a simulated worker, a micro-batch helper, an
// evaluation thread.
class GraphsAsWritten {
 public:
  GraphsAsWritten() : was_(torch::jit::getGraphExecutorOptimize()) { torch::jit::setGraphExecutorOptimize(false); }
  ~GraphsAsWritten() { torch::jit::setGraphExecutorOptimize(was_); }
  GraphsAsWritten(const GraphsAsWritten&) = delete;
  GraphsAsWritten& operator=(const GraphsAsWritten&) = delete;

 private:
  bool was_;
};

torch::jit::Module load_module(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw TorchScriptError("model.path '" + path + "' is not a file: save the module with " +
                           "torch.jit.script(module).save(path)");
  std::string bytes;
  try {
    bytes = read_file_bytes(path);
    check_zip_archive(bytes, "model.path '" + path + "'");
  } catch (const std::runtime_error& e) {
    throw TorchScriptError(std::string(e.what()) + "; save the module again with torch.jit.script(module).save(path)");
  }
  try {
    std::istringstream in(bytes);
    return torch::jit::load(in);
  } catch (const c10::Error& e) {
    throw TorchScriptError("model.path '" + path + "': LibTorch 1.13 cannot load it as TorchScript (" +
                           first_line(e.what_without_backtrace()) +
                           "); save it with torch.jit.script(module).save(path) from PyTorch 1.13");
  } catch (const std::exception& e) {
    throw TorchScriptError("model.path '" + path + "': cannot load it as TorchScript (" + first_line(e.what()) + ")");
  }
}

class TorchScriptModel final : public Model {
 public:
  TorchScriptModel(torch::jit::Module module, const ModelConfig& cfg, int64_t tokens_per_example, uint64_t seed)
      : module_(std::move(module)), cfg_(cfg), tokens_per_example_(std::max<int64_t>(1, tokens_per_example)) {
    check_buffers();
    mirror_parameters();
    read_forward_signature();
    if (cfg.reinit) reinitialise(seed);
  }

  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) override {
    at::Tensor out = call("forward", x, y);
    if (scoring_ != "module") return scored(out, y, /*per_example=*/false);
    if (out.numel() != 1 || !out.is_floating_point())
      throw TorchScriptError(where() + "forward(inputs, targets) must return the batch's mean loss, a 0-dim float " +
                             "tensor; it returned " + tensor_text(out));
    return out.reshape({});
  }

  at::Tensor example_losses(const at::Tensor& x, const at::Tensor& y) override {
    if (scoring_ != "module") return scored(call("forward", x, y), y, /*per_example=*/true);
    const int64_t B = x.size(0);
    if (has_example_losses_) {
      at::Tensor out = call("example_losses", x, y);
      if (out.numel() != B || !out.is_floating_point())
        throw TorchScriptError(where() + "example_losses(inputs, targets) must return one float loss per example (" +
                               std::to_string(B) + "); it returned " + tensor_text(out));
      return out.reshape({B});
    }
    // No per-example method: the module's own loss of each example alone.
    std::vector<at::Tensor> each;
    for (int64_t i = 0; i < B; ++i) each.push_back(loss(x.narrow(0, i, 1), y.narrow(0, i, 1)));
    return at::stack(each);
  }

  // atoll sample: a language model's forward(inputs) gives the logits of
  // the token after each position, (B, T, V) for token ids (B, T).
  at::Tensor next_token_logits(const at::Tensor& x) override {
    if (scoring_ == "module")
      throw TorchScriptError(where() + "atoll sample needs forward(inputs) to return logits (B, T, vocabulary); " +
                             "this module's forward(inputs, targets) returns its loss");
    if (scoring_ == "mse")
      throw TorchScriptError(where() + "the module is scored by model.loss = mse, so it is not a language model; " +
                             "atoll sample needs forward(inputs) to return logits (B, T, vocabulary)");
    const at::Tensor out = call("forward", x, at::Tensor());
    if (out.dim() != 3 || out.size(0) != x.size(0) || out.size(1) != x.size(1) || !out.is_floating_point())
      throw TorchScriptError(where() + "the module is not a language model: forward(inputs) of token ids " +
                             tensor_text(x) + " returned " + tensor_text(out) + "; atoll sample needs logits (B, T, " +
                             "vocabulary), one row of scores over the vocabulary per position");
    return out;
  }

  // A module scored by cross-entropy with one label per example is a
  // classifier: its accuracy comes from the same forward pass.
  ExampleScores example_scores(const at::Tensor& x, const at::Tensor& y) override {
    if (scoring_ != "cross_entropy" || y.dim() != 1) return Model::example_scores(x, y);
    const at::Tensor out = call("forward", x, y);
    const at::Tensor losses = scored(out, y, /*per_example=*/true);  // checks the shapes
    return {losses, out.reshape({y.size(0), -1}).argmax(1).eq(y)};
  }

  // 0 unless model.flops_per_sample gives them: a module cannot say how many
  // FLOPs it runs, so model_training_flops() (flop_count.h) counts them.
  double flops_per_token() const override { return cfg_.flops_per_sample / double(tokens_per_example_); }
  int64_t tokens_per_example() const override { return tokens_per_example_; }
  std::vector<std::pair<std::string, std::string>> parameter_aliases() const override { return aliases_; }

  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

 private:
  std::string where() const { return "model.path '" + cfg_.path + "': "; }

  // BatchNorm's running statistics change in training but are not
  // parameters: no strategy averages them and no checkpoint keeps them.
  void check_buffers() const {
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
      for (const char* stat : {"running_mean", "running_var", "num_batches_tracked"}) {
        const std::string suffix = stat;
        if (b.name.size() >= suffix.size() && b.name.compare(b.name.size() - suffix.size(), suffix.size(), suffix) == 0)
          throw TorchScriptError(where() + "buffer '" + b.name + "' is a running statistic (BatchNorm), which " +
                                 "atoll does not synchronise or checkpoint: use LayerNorm or GroupNorm, or " +
                                 "BatchNorm with track_running_stats=False");
      }
    }
  }

  void mirror_parameters() {
    // Tied parameters may come back from a file as two tensors over the
    // same memory, so a parameter is known by where its values live.
    std::map<std::pair<const void*, std::vector<int64_t>>, std::string> seen;
    std::map<std::string, at::Tensor> canonical;
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      at::Tensor t = p.value;
      const void* where_values = t.numel() > 0 ? t.data_ptr() : static_cast<const void*>(t.unsafeGetTensorImpl());
      const auto key = std::make_pair(where_values, t.sizes().vec());
      const auto found = seen.find(key);
      if (found != seen.end()) {  // tied: one parameter, two names
        aliases_.emplace_back(p.name, found->second);
        continue;
      }
      seen.emplace(key, p.name);
      canonical.emplace(p.name, t);
      if (t.scalar_type() != at::kFloat || !t.device().is_cpu())
        throw TorchScriptError(where() + "parameter '" + p.name + "' is " + tensor_text(t) +
                               "; atoll trains float32 CPU parameters: call module.float().cpu() before scripting");
      if (!t.requires_grad()) t.requires_grad_(true);  // every parameter is trained
      const auto dot = p.name.rfind('.');
      holder(dot == std::string::npos ? "" : p.name.substr(0, dot))
          .register_parameter(dot == std::string::npos ? p.name : p.name.substr(dot + 1), t);
    }
    if (seen.empty()) throw TorchScriptError(where() + "the module has no parameters to train");
    // Both places must hold the same tensor, or each would collect its own
    // share of the gradient and the mirrored one would miss the other's.
    for (const auto& [alias, name] : aliases_) {
      const auto dot = alias.rfind('.');
      torch::jit::Module owner = module_;
      if (dot != std::string::npos)
        for (size_t start = 0, end = 0; start < dot; start = end + 1) {
          end = std::min(alias.find('.', start), dot);
          owner = torch::jit::Module(owner.attr(alias.substr(start, end - start)).toObject());
        }
      owner.setattr(dot == std::string::npos ? alias : alias.substr(dot + 1), canonical.at(name));
    }
  }

  // The mirror module at dotted `path` ("" = this model), made on first use.
  torch::nn::Module& holder(const std::string& path) {
    if (path.empty()) return *this;
    auto it = holders_.find(path);
    if (it != holders_.end()) return *it->second;
    const auto dot = path.rfind('.');
    torch::nn::Module& parent = holder(dot == std::string::npos ? "" : path.substr(0, dot));
    auto child = parent.register_module(dot == std::string::npos ? path : path.substr(dot + 1),
                                        std::make_shared<torch::nn::Module>());
    holders_.emplace(path, child);
    return *child;
  }

  void read_forward_signature() {
    const auto forward = module_.find_method("forward");
    if (!forward) throw TorchScriptError(where() + "the module has no forward method");
    const size_t args = forward->function().getSchema().arguments().size();  // self included
    if (args != 2 && args != 3)
      throw TorchScriptError(where() + "forward takes " + std::to_string(args - 1) + " arguments; the contract is " +
                             "forward(inputs) -> outputs or forward(inputs, targets) -> mean loss");
    if (args == 3) {
      if (cfg_.loss != "auto")
        throw TorchScriptError(where() + "model.loss = '" + cfg_.loss +
                               "', but forward(inputs, targets) computes its " +
                               "own loss: leave model.loss = 'auto', or make forward take only the inputs");
      scoring_ = "module";
    } else {
      scoring_ = cfg_.loss == "auto" ? "cross_entropy" : cfg_.loss;
    }
    has_example_losses_ = module_.find_method("example_losses").has_value();
  }

  // `y`: the targets, passed when the method takes them; undefined when
  // only the inputs are at hand (sampling).
  at::Tensor call(const std::string& method, const at::Tensor& x, const at::Tensor& y) {
    std::vector<c10::IValue> in{x};
    if (method != "forward" || scoring_ == "module") in.emplace_back(y);
    c10::IValue out;
    try {
      GraphsAsWritten as_written;
      out = module_.get_method(method)(std::move(in));
    } catch (const c10::Error& e) {
      const std::string targets = y.defined() ? " and targets " + tensor_text(y) : "";
      throw TorchScriptError(where() + method + " failed on inputs " + tensor_text(x) + targets + ": " +
                             first_line(e.what_without_backtrace()));
    }
    if (!out.isTensor()) throw TorchScriptError(where() + method + " returned a " + out.tagKind() + ", not a tensor");
    return out.toTensor();
  }

  // model.loss applied to forward(inputs)'s output: the batch mean, or one
  // mean per example (the mean over its tokens or elements).
  at::Tensor scored(const at::Tensor& out, const at::Tensor& y, bool per_example) const {
    const int64_t B = y.size(0);
    if (scoring_ == "cross_entropy") {
      const int64_t classes = out.dim() >= 1 ? out.size(-1) : 0;
      if (at::isFloatingType(y.scalar_type()) || out.dim() < 2 || out.size(0) != B ||
          out.numel() != y.numel() * classes)
        throw TorchScriptError(where() + "model.loss = cross_entropy needs forward(inputs) to return logits of " +
                               "shape (B, ..., classes) for int64 targets of shape (B, ...); got outputs " +
                               tensor_text(out) + " and targets " + tensor_text(y));
      const at::Tensor logits = out.reshape({-1, classes}), targets = y.reshape({-1});
      if (!per_example) return at::cross_entropy_loss(logits, targets);
      return at::cross_entropy_loss(logits, targets, /*weight=*/{}, at::Reduction::None).view({B, -1}).mean(1);
    }
    if (!at::isFloatingType(y.scalar_type()) || out.numel() != y.numel() || out.size(0) != B)
      throw TorchScriptError(where() + "model.loss = mse needs forward(inputs) to return one value per target " +
                             "element, and float targets; got outputs " + tensor_text(out) + " and targets " +
                             tensor_text(y));
    const at::Tensor target = y.to(out.scalar_type()).reshape(out.sizes());
    if (!per_example) return at::mse_loss(out, target);
    return at::mse_loss(out, target, at::Reduction::None).reshape({B, -1}).mean(1);
  }

  // PyTorch's default for Linear and Conv weights, U(+-1/sqrt(fan_in)), on
  // every tensor of two or more dimensions; vectors (biases, norm scales)
  // keep their saved values, which are usually what their layer wants.
  void reinitialise(uint64_t seed) {
    at::Generator gen = make_init_generator(seed);
    at::NoGradGuard no_grad;
    for (auto& p : parameters()) {
      if (p.dim() < 2 || p.numel() == 0) continue;
      const double bound = 1.0 / std::sqrt(double(p.numel() / p.size(0)));
      p.uniform_(-bound, bound, gen);
    }
  }

  torch::jit::Module module_;
  ModelConfig cfg_;
  int64_t tokens_per_example_;
  std::map<std::string, std::shared_ptr<torch::nn::Module>> holders_;
  std::vector<std::pair<std::string, std::string>> aliases_;  // (alias, parameter name)
  std::string scoring_;                                       // module | cross_entropy | mse
  bool has_example_losses_ = false;
};

}  // namespace

std::shared_ptr<Model> make_torchscript_model(const ModelConfig& cfg, int64_t tokens_per_example, uint64_t seed) {
  return std::make_shared<TorchScriptModel>(load_module(cfg.path), cfg, tokens_per_example, seed);
}

void save_torchscript_with_weights(const std::string& module_path,
                                   const std::vector<std::pair<std::string, at::Tensor>>& weights,
                                   const std::string& out_path) {
  torch::jit::Module module = load_module(module_path);
  std::map<std::string, at::Tensor> given(weights.begin(), weights.end());
  at::NoGradGuard no_grad;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    const auto it = given.find(p.name);
    if (it == given.end())
      throw TorchScriptError("the weights have no tensor '" + p.name + "', a parameter of '" + module_path + "'");
    if (!it->second.sizes().equals(p.value.sizes()))
      throw TorchScriptError("weight '" + p.name + "' is " + tensor_text(it->second) + " but '" + module_path +
                             "' has " + tensor_text(p.value));
    p.value.copy_(it->second);
  }
  const std::string tmp = out_path + ".tmp";
  try {
    module.save(tmp);
  } catch (const c10::Error& e) {
    std::filesystem::remove(tmp);
    throw TorchScriptError("cannot write '" + out_path + "': " + first_line(e.what_without_backtrace()));
  }
  std::filesystem::rename(tmp, out_path);
}

}  // namespace atl
