#include "compress/codec_names.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/checks.h"

namespace atl {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Encoded sizes (compress/codec.h has each format). Block scales are fp32.
double fp32_bytes(int64_t n, const CodecSizing&) { return 4.0 * double(n); }
double half_bytes(int64_t n, const CodecSizing&) { return 2.0 * double(n); }
double int8_bytes(int64_t n, const CodecSizing& s) { return double(n) + 4.0 * double(ceil_div(n, s.block)); }
double fp4_bytes(int64_t n, const CodecSizing& s) {
  return double(ceil_div(n, 2)) + 4.0 * double(ceil_div(n, s.block));
}
// (fp32 value + index) per kept entry; each segment keeps its own k.
double topk_bytes(int64_t n, const CodecSizing& s) {
  int64_t total = 0, kept = 0;
  for (int64_t len : s.topk_segments) total += len;
  if (s.topk_segments.empty()) {
    kept = topk_kept(n, s.topk_density);
  } else if (total != n) {
    throw std::invalid_argument("codec topk: the payload has " + std::to_string(n) +
                                " elements but its tensors add up to " + std::to_string(total));
  } else {
    for (int64_t len : s.topk_segments) kept += topk_kept(len, s.topk_density);
  }
  return double(kept) * double(4 + s.index_bytes);
}

bool has_shorthand(const std::string& name) {
  for (const auto& c : codec_table())
    if (c.shorthand_for && name == c.shorthand_for) return true;
  return false;
}

const CodecInfo& known_codec(const std::string& name) {
  const CodecInfo* c = find_codec(name);
  if (!c) {
    throw std::invalid_argument("unknown codec '" + name + "': allowed values are " + join_choices(codec_names()));
  }
  return *c;
}

}  // namespace

const std::vector<CodecInfo>& codec_table() {
  // One line per codec; make_codec() (codec.cpp) builds each.
  static const std::vector<CodecInfo> table = {
      // name       shorthand for  sparse uncompressed encoded bytes
      {"fp32", nullptr, false, true, fp32_bytes},     {"fp16", nullptr, false, false, half_bytes},
      {"bf16", nullptr, false, false, half_bytes},    {"int8", nullptr, false, false, int8_bytes},
      {"fp4", "fp4-e3m0", false, false, fp4_bytes},   {"fp4-e3m0", nullptr, false, false, fp4_bytes},
      {"fp4-e2m1", nullptr, false, false, fp4_bytes}, {"topk", nullptr, true, false, topk_bytes},
  };
  return table;
}

const CodecInfo* find_codec(const std::string& name) {
  for (const auto& c : codec_table())
    if (name == c.name) return &c;
  return nullptr;
}

const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& c : codec_table()) v.push_back(c.name);
    return v;
  }();
  return names;
}

bool codec_is_sparse(const std::string& name) { return known_codec(name).sparse; }
bool codec_is_uncompressed(const std::string& name) { return known_codec(name).uncompressed; }

int64_t topk_kept(int64_t n, double density) {
  if (n <= 0) return 0;
  return std::clamp<int64_t>(std::llround(density * double(n)), 1, n);
}

double codec_encoded_bytes(const std::string& name, int64_t n, const CodecSizing& s) {
  const CodecInfo& c = known_codec(name);
  // The checks make_codec makes, for every name.
  if (n < 0) throw std::invalid_argument("codec " + name + ": a payload has >= 0 elements, got " + std::to_string(n));
  if (s.block < 1) throw std::invalid_argument("codec block must be >= 1, got " + std::to_string(s.block));
  if (!(s.topk_density > 0 && s.topk_density <= 1))
    throw std::invalid_argument("codec top-k density must be in (0, 1], got " + std::to_string(s.topk_density));
  if (s.index_bytes < 1)
    throw std::invalid_argument("codec index bytes must be >= 1, got " + std::to_string(s.index_bytes));
  for (int64_t len : s.topk_segments)
    if (len < 0) throw std::invalid_argument("codec top-k segment sizes must be >= 0, got " + std::to_string(len));
  return c.encoded_bytes(n, s);
}

std::string codec_choices() {
  std::vector<std::string> shown;
  for (const auto& c : codec_table()) {
    if (has_shorthand(c.name)) continue;  // shown as "shorthand (= name)"
    shown.push_back(c.shorthand_for ? std::string(c.name) + " (= " + c.shorthand_for + ")" : c.name);
  }
  return join_choices(shown);
}

std::string dense_codec_choices() {
  std::vector<std::string> shown;
  for (const auto& c : codec_table())
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
