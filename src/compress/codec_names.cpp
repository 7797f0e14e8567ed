#include "compress/codec_names.h"

#include "config/checks.h"

namespace atl {
namespace {

struct CodecName {
  const char* name;
  const char* shorthand_for;  // "fp4" is fp4-e3m0; nullptr if a name of its own
  bool sparse;                // sends indices: the receivers learn the positions from the payload
};

// One line per codec; make_codec() (codec.cpp) builds each.
const CodecName kCodecs[] = {
    {"fp32", nullptr, false},    {"fp16", nullptr, false},     {"bf16", nullptr, false},
    {"int8", nullptr, false},    {"fp4", "fp4-e3m0", false},   {"fp4-e3m0", nullptr, false},
    {"fp4-e2m1", nullptr, false}, {"topk", nullptr, true},
};

bool has_shorthand(const std::string& name) {
  for (const auto& c : kCodecs)
    if (c.shorthand_for && name == c.shorthand_for) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& c : kCodecs) v.push_back(c.name);
    return v;
  }();
  return names;
}

std::string codec_choices() {
  std::vector<std::string> shown;
  for (const auto& c : kCodecs) {
    if (has_shorthand(c.name)) continue;  // shown as "shorthand (= name)"
    shown.push_back(c.shorthand_for ? std::string(c.name) + " (= " + c.shorthand_for + ")" : c.name);
  }
  return join_choices(shown);
}

std::string dense_codec_choices() {
  std::vector<std::string> shown;
  for (const auto& c : kCodecs)
    if (!c.sparse && !has_shorthand(c.name)) shown.push_back(c.name);
  return join_choices(shown);
}

void validate_codec_key(const std::string& key, const std::string& name, std::vector<std::string>& errors) {
  Problems(errors).enum_check(key, name, codec_names());
}

void validate_codec_section(const CodecConfig& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.block >= 1, "codec.block must be >= 1");
  p.need(c.topk_density > 0 && c.topk_density <= 1, "codec.topk_density must be in (0, 1]");
  p.enum_check("codec.topk_scope", c.topk_scope, topk_scopes());
}

const std::vector<std::string>& topk_scopes() {
  static const std::vector<std::string> scopes = {"tensor", "global"};
  return scopes;
}

}  // namespace atl
