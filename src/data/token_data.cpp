// nanoGPT-style token files and prepared-folder loading.
#include "atoll/data.h"
#include "util/file_io.h"
#include "util/json_input.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace atl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// meta.json integers, read strictly: nlohmann converts a float such as 1e30
// or -5.5 to an integer type by a plain cast, which is undefined behaviour
// when the value does not fit (found by fuzz/fuzz_token_file). Messages
// describe a wrong value, never dump it: dump() recurses once per level.
int64_t integer_in(const json& value, int64_t lo, int64_t hi, const char* key) {
  if (!value.is_number_integer())
    throw std::runtime_error(std::string(key) + " must hold integers, not " + describe_json_value(value));
  const bool fits = value.is_number_unsigned() ? value.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                               : value.get<int64_t>() >= lo && value.get<int64_t>() <= hi;
  if (!fits)
    throw std::runtime_error(std::string(key) + " value " + value.dump() + " is outside " + std::to_string(lo) + ".." +
                             std::to_string(hi));
  return value.get<int64_t>();  // fits, so exact for unsigned values too
}

template <typename T>
std::vector<T> integers_in(const json& value, int64_t lo, int64_t hi, const char* key) {
  if (!value.is_array()) throw std::runtime_error(std::string(key) + " must be an array of integers");
  std::vector<T> out;
  out.reserve(value.size());
  for (const json& item : value) out.push_back(static_cast<T>(integer_in(item, lo, hi, key)));
  return out;
}

// Checks token ids and document starts of one split; throws naming the file.
void validate_split(const TokenSplit& split, int64_t vocab_size, const std::string& file) {
  if (split.tokens.empty()) throw std::runtime_error(file + " is empty; prepare the data again (atoll prepare)");
  for (size_t i = 0; i < split.tokens.size(); ++i) {
    if (split.tokens[i] >= vocab_size)
      throw std::runtime_error(file + ": token " + std::to_string(split.tokens[i]) + " at position " +
                               std::to_string(i) + " is not below vocab_size " + std::to_string(vocab_size) +
                               "; set data.vocab_size to the tokenizer's vocabulary size");
  }
  const auto n = static_cast<int64_t>(split.tokens.size());
  if (split.doc_starts.empty() || split.doc_starts.front() != 0)
    throw std::runtime_error(file + ": document starts must begin with 0 (see meta.json)");
  for (size_t i = 0; i < split.doc_starts.size(); ++i) {
    const int64_t s = split.doc_starts[i];
    if (s >= n || (i > 0 && s <= split.doc_starts[i - 1]))
      throw std::runtime_error(file + ": document start " + std::to_string(s) + " (entry " + std::to_string(i) +
                               ") is not strictly increasing and below the token count " + std::to_string(n) +
                               "; fix or delete meta.json");
  }
}

}  // namespace

std::vector<uint16_t> read_token_file(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  if (bytes.size() % 2 != 0)
    throw std::runtime_error(path + " has an odd size (" + std::to_string(bytes.size()) +
                             " bytes); a token file holds little-endian uint16 ids");
  std::vector<uint16_t> tokens(bytes.size() / 2);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
  return tokens;
}

void write_token_file(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::string bytes(tokens.size() * 2, '\0');
  for (size_t i = 0; i < tokens.size(); ++i) {
    bytes[2 * i] = static_cast<char>(tokens[i] & 0xFF);
    bytes[2 * i + 1] = static_cast<char>(tokens[i] >> 8);
  }
  write_file_atomic(path, bytes);
}

TokenData load_token_data(const std::string& dir, int64_t vocab_size_hint) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw std::runtime_error("data folder not found: " + dir + "; prepare it first (atoll prepare) or fix data.dir");
  const std::string train_path = (root / "train.bin").string();
  const std::string val_path = (root / "val.bin").string();
  const std::string meta_path = (root / "meta.json").string();

  TokenData data;
  data.train.tokens = read_token_file(train_path);
  data.val.tokens = read_token_file(val_path);
  data.train.doc_starts = {0};
  data.val.doc_starts = {0};

  if (fs::exists(meta_path, ec)) {
    const std::string text = read_file_bytes(meta_path);
    check_json_depth(text, meta_path);
    json meta;
    try {
      meta = json::parse(text);
      constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
      data.vocab_size = integer_in(meta.at("vocab_size"), std::numeric_limits<int64_t>::min(), kMax, "vocab_size");
      data.tokenizer = meta.at("tokenizer").get<std::string>();
      if (meta.contains("train_docs"))
        data.train.doc_starts = integers_in<int64_t>(meta["train_docs"], 0, kMax, "train_docs");
      if (meta.contains("val_docs")) data.val.doc_starts = integers_in<int64_t>(meta["val_docs"], 0, kMax, "val_docs");
      if (meta.contains("char_vocab"))
        data.char_vocab = integers_in<uint32_t>(meta["char_vocab"], 0, 0x10FFFF, "char_vocab");
    } catch (const std::exception& e) {  // json::exception, or integer_in's runtime_error
      throw std::runtime_error(meta_path + ": " + e.what() +
                               "; prepare the data again or delete meta.json and pass "
                               "data.vocab_size");
    }
    if (vocab_size_hint > 0 && vocab_size_hint != data.vocab_size)
      throw std::runtime_error("data.vocab_size = " + std::to_string(vocab_size_hint) + " disagrees with vocab_size " +
                               std::to_string(data.vocab_size) + " in " + meta_path +
                               "; leave data.vocab_size at 0 (auto)");
    if (data.tokenizer != "char" && data.tokenizer != "byte" && data.tokenizer != "bin")
      throw std::runtime_error(meta_path + ": unknown tokenizer '" + data.tokenizer + "' (allowed: char, byte, bin)");
    if (data.tokenizer == "char" && static_cast<int64_t>(data.char_vocab.size()) != data.vocab_size)
      throw std::runtime_error(meta_path + ": char_vocab has " + std::to_string(data.char_vocab.size()) +
                               " entries but vocab_size is " + std::to_string(data.vocab_size) +
                               "; prepare the data again");
  } else {
    if (vocab_size_hint <= 0)
      throw std::runtime_error(dir +
                               " has no meta.json, so the vocabulary size is unknown; "
                               "pass data.vocab_size (e.g. 50257 for GPT-2 tokens)");
    data.vocab_size = vocab_size_hint;
    data.tokenizer = "bin";
  }
  if (data.vocab_size < 1 || data.vocab_size > 65536)
    throw std::runtime_error("vocab_size " + std::to_string(data.vocab_size) + " for " + dir +
                             " must be in 1..65536 (token files hold uint16 ids)");
  validate_split(data.train, data.vocab_size, train_path);
  validate_split(data.val, data.vocab_size, val_path);
  return data;
}

double unigram_entropy_nats(const std::vector<uint16_t>& tokens) {
  if (tokens.empty()) return 0.0;
  std::vector<int64_t> counts(65536, 0);
  for (uint16_t t : tokens) ++counts[t];
  const double n = static_cast<double>(tokens.size());
  double h = 0.0;
  for (int64_t c : counts) {
    if (c == 0) continue;
    const double p = static_cast<double>(c) / n;
    h -= p * std::log(p);
  }
  return h;
}

}  // namespace atl
