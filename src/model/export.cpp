#include "model/export.h"

#include <ATen/ATen.h>

#include <set>
#include <stdexcept>

#include "model/gpt_names.h"

namespace atl {
namespace {

std::vector<std::pair<std::string, at::Tensor>> named_copies(Model& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : model.named_parameters()) out.emplace_back(item.key(), item.value().detach().clone());
  return out;
}

std::string shape_string(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

}  // namespace

std::vector<NamedTensor> exported_tensors(Model& model, const ModelConfig& cfg) {
  auto named = named_copies(model);
  if (cfg.kind == "gpt") return nanogpt_tensors(named);
  std::vector<NamedTensor> out;
  std::map<std::string, at::Tensor> by_name;
  for (auto& [name, t] : named) {
    by_name[name] = t;
    out.push_back({name, t});
  }
  for (const auto& [alias, name] : model.parameter_aliases()) out.push_back({alias, by_name.at(name)});
  return out;
}

void load_exported_tensors(Model& model, const ModelConfig& cfg, const std::vector<NamedTensor>& tensors,
                           const std::string& source) {
  std::map<std::string, at::Tensor> given;
  for (const auto& t : tensors) given[t.name] = t.tensor;
  std::set<std::string> used;
  at::NoGradGuard no_grad;
  for (auto& item : model.named_parameters()) {
    const std::string name = cfg.kind == "gpt" ? nanogpt_name(item.key()) : item.key();
    const auto it = given.find(name);
    if (it == given.end()) throw std::runtime_error(source + ": no tensor '" + name + "', which the model needs");
    if (!it->second.sizes().equals(item.value().sizes()))
      throw std::runtime_error(source + ": tensor '" + name + "' has shape " + shape_string(it->second) +
                               " but the model's is " + shape_string(item.value()));
    item.value().copy_(it->second);
    used.insert(name);
  }
  // Tied names repeat a parameter; anything else is a different model.
  for (const auto& [alias, name] : model.parameter_aliases()) used.insert(alias);
  if (cfg.kind == "gpt") used.insert("lm_head.weight");
  for (const auto& [name, t] : given)
    if (!used.count(name))
      throw std::runtime_error(source + ": tensor '" + name +
                               "' is not a parameter of this model (model.kind = " + cfg.kind + ")");
}

}  // namespace atl
