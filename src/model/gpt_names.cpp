// The built-in GPT's parameter names <-> nanoGPT's (table in gpt_names.h).
#include "model/gpt_names.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

namespace atl {
namespace {

struct Names {
  const char* atoll;
  const char* nanogpt;
};

// In nanoGPT's state_dict order: a module's own parameters, then its
// children in the order model.py assigns them (Block: ln_1, attn, ln_2, mlp).
const Names kBefore[] = {{"wte", "transformer.wte.weight"}, {"wpe", "transformer.wpe.weight"}};
const Names kBlock[] = {
    {"ln_1.weight", "ln_1.weight"},
    {"ln_1.bias", "ln_1.bias"},
    {"c_attn.weight", "attn.c_attn.weight"},
    {"c_attn.bias", "attn.c_attn.bias"},
    {"attn_proj.weight", "attn.c_proj.weight"},
    {"attn_proj.bias", "attn.c_proj.bias"},
    {"ln_2.weight", "ln_2.weight"},
    {"ln_2.bias", "ln_2.bias"},
    {"c_fc.weight", "mlp.c_fc.weight"},
    {"c_fc.bias", "mlp.c_fc.bias"},
    {"mlp_proj.weight", "mlp.c_proj.weight"},
    {"mlp_proj.bias", "mlp.c_proj.bias"},
};
const Names kAfter[] = {{"ln_f.weight", "transformer.ln_f.weight"}, {"ln_f.bias", "transformer.ln_f.bias"}};
constexpr int kBlockSlots = sizeof kBlock / sizeof kBlock[0];

bool is_bias(const char* name) {
  const std::string s = name;
  return s.size() >= 5 && s.compare(s.size() - 5, 5, ".bias") == 0;
}

// A parameter's place in the model, which orders the export.
struct Where {
  int part = 0;       // 0: embeddings, 1: a block, 2: the final LayerNorm
  int64_t layer = 0;  // blocks only
  int slot = 0;       // index into kBefore, kBlock or kAfter
  bool operator<(const Where& o) const { return std::tie(part, layer, slot) < std::tie(o.part, o.layer, o.slot); }
};

const char* name_in(const Names& n, bool nanogpt) { return nanogpt ? n.nanogpt : n.atoll; }

std::string name_of(const Where& w, bool nanogpt) {
  if (w.part == 0) return name_in(kBefore[w.slot], nanogpt);
  if (w.part == 2) return name_in(kAfter[w.slot], nanogpt);
  return (nanogpt ? "transformer.h." : "h") + std::to_string(w.layer) + "." + name_in(kBlock[w.slot], nanogpt);
}

// Where `name` is, in atoll's or nanoGPT's naming; nullopt if it is no GPT
// parameter. Layer numbers as the models write them: decimal, no sign, no
// leading zero, so that each parameter has exactly one name.
std::optional<Where> locate(const std::string& name, bool nanogpt) {
  for (int i = 0; i < 2; ++i) {
    if (name == name_in(kBefore[i], nanogpt)) return Where{0, 0, i};
    if (name == name_in(kAfter[i], nanogpt)) return Where{2, 0, i};
  }
  const std::string prefix = nanogpt ? "transformer.h." : "h";
  if (name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  size_t pos = prefix.size(), digits = 0;
  while (pos + digits < name.size() && name[pos + digits] >= '0' && name[pos + digits] <= '9') ++digits;
  // Nine digits keep the number inside int64 with room to spare.
  if (digits == 0 || digits > 9 || (digits > 1 && name[pos] == '0')) return std::nullopt;
  if (pos + digits >= name.size() || name[pos + digits] != '.') return std::nullopt;
  const int64_t layer = std::stoll(name.substr(pos, digits));
  const std::string rest = name.substr(pos + digits + 1);
  for (int i = 0; i < kBlockSlots; ++i)
    if (rest == name_in(kBlock[i], nanogpt)) return Where{1, layer, i};
  return std::nullopt;
}

}  // namespace

std::string nanogpt_name(const std::string& atoll_name) {
  const std::optional<Where> w = locate(atoll_name, false);
  if (!w) throw std::invalid_argument("'" + atoll_name + "' is not a parameter name of the built-in GPT");
  return name_of(*w, true);
}

std::string atoll_gpt_name(const std::string& nanogpt) {
  if (nanogpt == kNanogptLmHead)
    throw std::invalid_argument(
        std::string(kNanogptLmHead) +
        " is tied to transformer.wte.weight: the built-in GPT has one parameter (wte) for both");
  const std::optional<Where> w = locate(nanogpt, true);
  if (!w) throw std::invalid_argument("'" + nanogpt + "' is not a parameter name of nanoGPT's GPT");
  return name_of(*w, false);
}

std::vector<NamedTensor> nanogpt_tensors(const std::vector<std::pair<std::string, at::Tensor>>& atoll_named_params) {
  std::map<Where, at::Tensor> found;  // sorted into nanoGPT's order
  bool bias = false;
  int64_t n_layer = 0;
  for (const auto& [name, tensor] : atoll_named_params) {
    const std::optional<Where> w = locate(name, false);
    if (!w) throw std::invalid_argument("nanogpt_tensors: '" + name + "' is not a parameter name of the built-in GPT");
    if (!found.emplace(*w, tensor).second) throw std::invalid_argument("nanogpt_tensors: '" + name + "' appears twice");
    if (w->part == 1) {
      bias |= is_bias(kBlock[w->slot].atoll);
      n_layer = std::max(n_layer, w->layer + 1);
    } else if (w->part == 2) {
      bias |= is_bias(kAfter[w->slot].atoll);
    }
  }

  // Everything a GPT with these layers and biases has; the names given are
  // all among them, so a count tells whether any is missing.
  std::vector<Where> expected;
  for (int i = 0; i < 2; ++i) expected.push_back({0, 0, i});
  for (int64_t l = 0; l < n_layer; ++l)
    for (int i = 0; i < kBlockSlots; ++i)
      if (bias || !is_bias(kBlock[i].atoll)) expected.push_back({1, l, i});
  for (int i = 0; i < 2; ++i)
    if (bias || !is_bias(kAfter[i].atoll)) expected.push_back({2, 0, i});
  if (found.size() != expected.size()) {
    std::string missing;
    size_t count = 0;
    for (const Where& w : expected)
      if (!found.count(w) && ++count <= 5) missing += (count > 1 ? ", " : "") + name_of(w, false);
    if (count > 5) missing += " and " + std::to_string(count - 5) + " more";
    throw std::invalid_argument("nanogpt_tensors: not a whole GPT (" + std::to_string(n_layer) + " layers, " +
                                (bias ? "with" : "without") + " biases): missing " + missing);
  }

  std::vector<NamedTensor> out;
  out.reserve(found.size() + 1);
  for (const auto& [where, tensor] : found) out.push_back({name_of(where, true), tensor.detach()});
  out.push_back({kNanogptLmHead, found.at(Where{0, 0, 0}).detach().clone()});
  return out;
}

}  // namespace atl
