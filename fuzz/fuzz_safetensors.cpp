// libFuzzer target: the safetensors reader parse_safetensors()
// (src/model/safetensors.cpp), which reads weight files users hand us.
//
// Each input is parsed as a whole file. Most mutations of the JSON change
// its length and so stop at the header size check; when the input's size
// field does not say where its JSON object ends (found by matching braces
// outside strings, plus the spaces after it), the input is parsed a second
// time with the field set to that, so that they reach the entry checks.
// The seeds (fuzz/corpus/fuzz_safetensors) are whole files written by
// fuzz/make_safetensors_seeds.cpp.
// For a file that parses: encode_safetensors() of its tensors and metadata
// must parse back to the same names, dtypes, shapes, bytes and metadata, and
// encoding that again must give the same bytes.
//
// Expected: SafetensorsError. Findings: crashes, sanitizer reports, any other
// exception (std::bad_alloc, nlohmann's, c10::Error...), a broken round trip,
// timeouts.
#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "model/safetensors.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what.c_str());
  std::abort();
}

bool same(const atl::SafetensorsFile& a, const atl::SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const at::Tensor &x = a.tensors[i].tensor, &y = b.tensors[i].tensor;
    if (a.tensors[i].name != b.tensors[i].name || x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes())
      return false;
    const size_t n = static_cast<size_t>(x.numel()) * x.element_size();
    if (n > 0 && std::memcmp(x.data_ptr(), y.data_ptr(), n) != 0) return false;  // bits: NaNs compare too
  }
  return true;
}

void check(const std::string& bytes) {
  atl::SafetensorsFile file;
  try {
    file = atl::parse_safetensors(bytes, "input");
  } catch (const atl::SafetensorsError&) {
    return;
  }
  std::string encoded;
  try {
    encoded = atl::encode_safetensors(file.tensors, file.metadata);
  } catch (const atl::SafetensorsError& e) {
    finding(std::string("a parsed file does not encode: ") + e.what());
  }
  atl::SafetensorsFile back;
  try {
    back = atl::parse_safetensors(encoded, "encoded");
  } catch (const atl::SafetensorsError& e) {
    finding(std::string("encode_safetensors()'s output does not parse: ") + e.what());
  }
  if (!same(file, back)) finding("parse(encode(parse(input))) differs from parse(input)");
  if (atl::encode_safetensors(back.tensors, back.metadata) != encoded) finding("encode(parse(encode(f))) != encode(f)");
}

// Where the JSON object starting at byte 8 ends, spaces after it included
// (0 if it does not start with '{' or does not end).
size_t json_end(const std::string& bytes) {
  if (bytes.size() < 9 || bytes[8] != '{') return 0;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 8; i < bytes.size(); ++i) {
    const char c = bytes[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      size_t end = i + 1;
      while (end < bytes.size() && bytes[end] == ' ') ++end;
      return end;
    }
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  check(bytes);
  const size_t end = json_end(bytes);
  if (end > 0) {
    const uint64_t header_size = end - 8;
    std::string fixed = bytes;
    std::memcpy(&fixed[0], &header_size, sizeof header_size);
    if (fixed != bytes) check(fixed);
  }
  return 0;
}
