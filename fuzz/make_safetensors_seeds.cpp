// Writes small valid safetensors files into a folder (the seed corpus
// fuzz/corpus/fuzz_safetensors): with the real writer, one per dtype group,
// odd shapes, metadata, a tiny nanoGPT-named GPT; and, built by hand, the
// layouts other writers produce (keys out of data order, whitespace, no
// padding, metadata last), which our writer never does.
//   cmake --build build-fuzz --target make_safetensors_seeds  (not built by default)
//   build-fuzz/make_safetensors_seeds fuzz/corpus/fuzz_safetensors
#include <ATen/ATen.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "model/gpt_names.h"
#include "model/safetensors.h"

namespace {

void write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
}

// Element i is i * 37 + 11 (mod the type's range): every byte differs.
at::Tensor filled(at::ScalarType type, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return (at::arange(n, at::kLong) * 37 + 11).remainder(type == at::kBool ? 2 : 120).to(type).view(shape);
}

// A file another writer might produce: `header` as given (no padding).
std::string by_hand(const std::string& header, const std::string& buffer) {
  const uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + buffer;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  write(dir, "empty", atl::encode_safetensors({}));
  write(dir, "metadata_only", atl::encode_safetensors({}, {{"format", "pt"}, {"note", "line\nbreak \"quoted\" ✓"}}));
  write(dir, "floats",
        atl::encode_safetensors({{"f16", filled(at::kHalf, {2, 3})},
                                 {"bf16", filled(at::kBFloat16, {3})},
                                 {"f32", filled(at::kFloat, {2, 2})},
                                 {"f64", filled(at::kDouble, {2})}}));
  write(dir, "integers",
        atl::encode_safetensors({{"bool", filled(at::kBool, {5})},
                                 {"u8", filled(at::kByte, {4})},
                                 {"i8", filled(at::kChar, {2, 2})},
                                 {"i16", filled(at::kShort, {3})},
                                 {"i32", filled(at::kInt, {1, 2})},
                                 {"i64", filled(at::kLong, {2})}}));
  write(dir, "shapes",
        atl::encode_safetensors({{"scalar", filled(at::kFloat, {})},
                                 {"zero", filled(at::kFloat, {0, 3})},
                                 {"also_zero", filled(at::kLong, {2, 0})},
                                 {"rank6", filled(at::kByte, {1, 2, 1, 2, 1, 2})}},
                                {{"format", "pt"}}));

  // A 1-layer GPT with biases, n_embd 2, vocab 3, block 2, named as nanoGPT names it.
  std::vector<std::pair<std::string, at::Tensor>> gpt = {{"wte", filled(at::kFloat, {3, 2})},
                                                         {"wpe", filled(at::kFloat, {2, 2})}};
  for (const char* m : {"ln_1", "c_attn", "attn_proj", "ln_2", "c_fc", "mlp_proj"}) {
    const std::string name = std::string("h0.") + m;
    const bool ln = name.find("ln_") != std::string::npos;
    const int64_t out = name == "h0.c_attn" ? 6 : name == "h0.c_fc" ? 8 : 2;
    const int64_t in = name == "h0.mlp_proj" ? 8 : 2;
    gpt.emplace_back(name + ".weight", ln ? filled(at::kFloat, {2}) : filled(at::kFloat, {out, in}));
    gpt.emplace_back(name + ".bias", filled(at::kFloat, {ln ? 2 : out}));
  }
  gpt.emplace_back("ln_f.weight", filled(at::kFloat, {2}));
  gpt.emplace_back("ln_f.bias", filled(at::kFloat, {2}));
  write(dir, "nanogpt_tiny", atl::encode_safetensors(atl::nanogpt_tensors(gpt), {{"format", "pt"}}));

  // Other writers' layouts.
  std::string buffer(12, '\0');
  for (int i = 0; i < 12; ++i) buffer[i] = static_cast<char>(i * 37 + 11);
  write(dir, "other_writer",
        by_hand("{ \"z\": {\"shape\": [], \"dtype\": \"I64\", \"data_offsets\": [0, 8]},\n"
                "  \"a\": {\"data_offsets\": [8, 12], \"dtype\": \"F32\", \"shape\": [1, 1]},\n"
                "  \"nothing\": {\"dtype\": \"F64\", \"shape\": [0], \"data_offsets\": [12, 12]},\n"
                "  \"__metadata__\": {\"k\": \"v\", \"\\u00e9\\n\": \"\\\"\"} }",
                buffer));
  write(dir, "escaped_names",
        by_hand("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                "\"\\ud83d\\ude00\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[2,4]}}",
                buffer.substr(0, 4)));
  return 0;
}
