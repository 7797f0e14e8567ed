#include "compress/codec_names.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/checks.h"

namespace atl {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Encoded sizes by part (compress/codec.h and compress/chunk_topk.h have
// each format). Block scales are fp32.
CodecBytes fp32_bytes(int64_t n, const CodecSizing&) { return {4.0 * double(n), 0, 0}; }
CodecBytes half_bytes(int64_t n, const CodecSizing&) { return {2.0 * double(n), 0, 0}; }
// A byte per value (int8, fp8), an fp32 scale per block.
CodecBytes byte_bytes(int64_t n, const CodecSizing& s) { return {double(n), 0, 4.0 * double(ceil_div(n, s.block))}; }
CodecBytes fp4_bytes(int64_t n, const CodecSizing& s) {
  return {double(ceil_div(n, 2)), 0, 4.0 * double(ceil_div(n, s.block))};
}

// 2 bits per value, an fp32 scale per block.
CodecBytes two_bit_bytes(int64_t n, const CodecSizing& s) {
  return {double(ceil_div(2 * n, 8)), 0, 4.0 * double(ceil_div(n, s.block))};
}

// A bit per value, packed across the payload; an fp32 scale per block.
CodecBytes sign_bytes(int64_t n, const CodecSizing& s) {
  return {double(ceil_div(n, 8)), 0, 4.0 * double(ceil_div(n, s.block))};
}

std::vector<int64_t> segments_of(int64_t n, const CodecSizing& s, const char* codec) {
  return payload_segments(n, s.topk_segments, codec);
}

// (fp32 value + index) per kept entry; each segment keeps its own k.
CodecBytes topk_bytes(int64_t n, const CodecSizing& s) {
  int64_t kept = 0;
  if (s.topk_segments.empty()) {
    kept = topk_kept(n, s.topk_density);
  } else {
    for (int64_t len : segments_of(n, s, "topk")) kept += topk_kept(len, s.topk_density);
  }
  return {4.0 * double(kept), double(kept) * double(s.index_bytes), 0};
}

// Chunked top-k: every segment is cut into chunks of s.chunk entries.
struct ChunkCount {
  int64_t chunks = 0, kept = 0;
};
ChunkCount count_chunks(int64_t n, const CodecSizing& s, const char* codec) {
  ChunkCount c;
  for (int64_t len : segments_of(n, s, codec))
    for (int64_t lo = 0; lo < len; lo += s.chunk) {
      ++c.chunks;
      c.kept += chunk_kept(std::min(s.chunk, len - lo), s.chunk, s.chunk_topk);
    }
  return c;
}
double packed_bytes(int64_t count, int64_t bits) { return double(ceil_div(count * bits, 8)); }
// fp32 values; bit-packed positions inside their chunk.
CodecBytes chunk_topk_bytes(int64_t n, const CodecSizing& s) {
  const ChunkCount c = count_chunks(n, s, "topk-chunk");
  return {4.0 * double(c.kept), packed_bytes(c.kept, chunk_index_bits(s.chunk)), 0};
}
// 2-bit codes, bit-packed positions, one fp32 scale per chunk.
CodecBytes chunk_topk_2bit_bytes(int64_t n, const CodecSizing& s) {
  const ChunkCount c = count_chunks(n, s, "topk-chunk-2bit");
  return {packed_bytes(c.kept, 2), packed_bytes(c.kept, chunk_index_bits(s.chunk)), 4.0 * double(c.chunks)};
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
      // name             shorthand for  sparse uncompressed feedback encoded bytes
      {"fp32", nullptr, false, true, false, fp32_bytes},
      {"fp16", nullptr, false, false, false, half_bytes},
      {"bf16", nullptr, false, false, false, half_bytes},
      {"int8", nullptr, false, false, false, byte_bytes},
      {"fp8", "fp8-e4m3", false, false, false, byte_bytes},
      {"fp8-e4m3", nullptr, false, false, false, byte_bytes},
      {"fp8-e5m2", nullptr, false, false, false, byte_bytes},
      {"fp4", "fp4-e3m0", false, false, false, fp4_bytes},
      {"fp4-e3m0", nullptr, false, false, false, fp4_bytes},
      {"fp4-e2m1", nullptr, false, false, false, fp4_bytes},
      {"2bit", nullptr, false, false, true, two_bit_bytes},
      {"sign", nullptr, false, false, true, sign_bytes},
      {"topk", nullptr, true, false, true, topk_bytes},
      {"topk-chunk", nullptr, true, false, true, chunk_topk_bytes},
      {"topk-chunk-2bit", nullptr, true, false, true, chunk_topk_2bit_bytes},
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
bool codec_needs_feedback(const std::string& name) { return known_codec(name).feedback; }

std::vector<int64_t> payload_segments(int64_t n, const std::vector<int64_t>& segments, const std::string& codec) {
  if (segments.empty()) return {n};
  int64_t total = 0;
  for (int64_t len : segments) total += len;
  if (total != n) {
    throw std::invalid_argument("codec " + codec + ": the payload has " + std::to_string(n) +
                                " elements but its tensors add up to " + std::to_string(total));
  }
  return segments;
}

int64_t topk_kept(int64_t n, double density) {
  if (n <= 0) return 0;
  return std::clamp<int64_t>(std::llround(density * double(n)), 1, n);
}

int64_t chunk_kept(int64_t len, int64_t chunk, int64_t chunk_topk) {
  if (len <= 0) return 0;
  if (len >= chunk) return std::min(chunk_topk, len);
  // round(chunk_topk * len / chunk), halves up, in integers (len < chunk <= 2^24).
  const int64_t k = (2 * chunk_topk * len + chunk) / (2 * chunk);
  return std::clamp<int64_t>(k, 1, len);
}

int64_t chunk_index_bits(int64_t chunk) {
  int64_t bits = 1;
  while (bits < 62 && (int64_t(1) << bits) < chunk) ++bits;
  return bits;
}

void check_chunk_sizing(int64_t chunk, int64_t chunk_topk) {
  if (chunk < 1 || chunk > kMaxChunk)
    throw std::invalid_argument("codec chunk must be in [1, " + std::to_string(kMaxChunk) + "], got " +
                                std::to_string(chunk));
  if (chunk_topk < 1 || chunk_topk > chunk)
    throw std::invalid_argument("codec chunk_topk must be in [1, chunk = " + std::to_string(chunk) + "], got " +
                                std::to_string(chunk_topk));
}

double codec_encoded_bytes(const std::string& name, int64_t n, const CodecSizing& s) {
  return codec_encoded_parts(name, n, s).total();
}

CodecBytes codec_encoded_parts(const std::string& name, int64_t n, const CodecSizing& s) {
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
  check_chunk_sizing(s.chunk, s.chunk_topk);
  return c.encoded_parts(n, s);
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
    if (!c.sparse && !c.feedback && !has_shorthand(c.name)) shown.push_back(c.name);
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
  p.need(c.chunk >= 1 && c.chunk <= kMaxChunk, "codec.chunk (C) must be in [1, " + std::to_string(kMaxChunk) + "]");
  p.need(c.chunk_topk >= 1 && c.chunk_topk <= std::max<int64_t>(c.chunk, 1),
         "codec.chunk_topk (k) must be in [1, codec.chunk]");
}

const std::vector<std::string>& topk_scopes() {
  static const std::vector<std::string> scopes = {"tensor", "global"};
  return scopes;
}

}  // namespace atl
