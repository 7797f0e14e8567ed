// Byte and char (Unicode code point) tokenizers.
#include "atoll/data.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

namespace atl {
namespace {

std::string hex_code_point(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool valid_code_point(uint32_t cp) { return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF); }

// Strict UTF-8 decoding (rejects overlong forms, surrogates, > U+10FFFF and
// truncated sequences), calling f(code_point, byte_offset) for each.
template <class F>
void for_each_code_point(const std::string& s, F&& f) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const size_t start = i;
    const unsigned char b0 = p[i];
    uint32_t cp = 0;
    int extra = 0;
    uint32_t min_cp = 0;
    if (b0 < 0x80) {
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      cp = b0 & 0x1F, extra = 1, min_cp = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      cp = b0 & 0x0F, extra = 2, min_cp = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      cp = b0 & 0x07, extra = 3, min_cp = 0x10000;
    } else {
      throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(start) + ": unexpected byte " +
                                  std::to_string(b0) + "; convert the text to UTF-8 or use the byte tokenizer");
    }
    ++i;
    for (int k = 0; k < extra; ++k, ++i) {
      if (i >= n || (p[i] & 0xC0) != 0x80)
        throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(start) +
                                    ": truncated multi-byte sequence; convert the text to UTF-8 "
                                    "or use the byte tokenizer");
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (extra > 0 && (cp < min_cp || !valid_code_point(cp)))
      throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(start) +
                                  ": overlong form, surrogate or value above U+10FFFF; convert "
                                  "the text to UTF-8 or use the byte tokenizer");
    f(cp, start);
  }
}

class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string& utf8) const override {
    std::vector<int32_t> ids(utf8.size());
    for (size_t i = 0; i < utf8.size(); ++i) ids[i] = static_cast<unsigned char>(utf8[i]);
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string out(ids.size(), '\0');
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] > 255)
        throw std::invalid_argument("byte tokenizer: id " + std::to_string(ids[i]) + " at position " +
                                    std::to_string(i) + " is outside the vocabulary 0..255");
      out[i] = static_cast<char>(static_cast<unsigned char>(ids[i]));
    }
    return out;
  }
  int64_t vocab_size() const override { return 256; }
  std::string kind() const override { return "byte"; }
};

class CharTokenizer final : public Tokenizer {
 public:
  explicit CharTokenizer(std::vector<uint32_t> code_points) : code_points_(std::move(code_points)) {
    if (code_points_.empty())
      throw std::invalid_argument(
          "char tokenizer: empty vocabulary; prepare the data from "
          "non-empty text");
    if (code_points_.size() > 65536)
      throw std::invalid_argument("char tokenizer: " + std::to_string(code_points_.size()) +
                                  " distinct characters exceed the uint16 token limit of 65536; "
                                  "use the byte tokenizer");
    ids_.reserve(code_points_.size());
    for (size_t i = 0; i < code_points_.size(); ++i) {
      const uint32_t cp = code_points_[i];
      if (!valid_code_point(cp))
        throw std::invalid_argument("char tokenizer: " + std::to_string(cp) + " is not a valid Unicode code point");
      if (!ids_.emplace(cp, static_cast<int32_t>(i)).second)
        throw std::invalid_argument("char tokenizer: code point " + hex_code_point(cp) +
                                    " appears twice in the vocabulary");
    }
  }

  std::vector<int32_t> encode(const std::string& utf8) const override {
    std::vector<int32_t> out;
    out.reserve(utf8.size());
    for_each_code_point(utf8, [&](uint32_t cp, size_t offset) {
      const auto it = ids_.find(cp);
      if (it == ids_.end()) {
        std::string ch;
        append_utf8(ch, cp);
        throw std::invalid_argument("char tokenizer: character '" + ch + "' (" + hex_code_point(cp) + ") at byte " +
                                    std::to_string(offset) +
                                    " is not in the vocabulary; re-prepare the data including "
                                    "this text or use the byte tokenizer");
      }
      out.push_back(it->second);
    });
    return out;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string out;
    out.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= code_points_.size())
        throw std::invalid_argument("char tokenizer: id " + std::to_string(ids[i]) + " at position " +
                                    std::to_string(i) + " is outside the vocabulary 0.." +
                                    std::to_string(code_points_.size() - 1));
      append_utf8(out, code_points_[static_cast<size_t>(ids[i])]);
    }
    return out;
  }

  int64_t vocab_size() const override { return static_cast<int64_t>(code_points_.size()); }
  std::string kind() const override { return "char"; }

 private:
  std::vector<uint32_t> code_points_;          // id -> code point
  std::unordered_map<uint32_t, int32_t> ids_;  // code point -> id
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer() { return std::make_unique<ByteTokenizer>(); }

std::unique_ptr<Tokenizer> make_char_tokenizer_from_text(const std::string& training_text) {
  std::vector<uint32_t> cps;
  std::vector<bool> seen(0x110000, false);
  for_each_code_point(training_text, [&](uint32_t cp, size_t) {
    if (!seen[cp]) {
      seen[cp] = true;
      cps.push_back(cp);
    }
  });
  std::sort(cps.begin(), cps.end());
  return std::make_unique<CharTokenizer>(std::move(cps));
}

std::unique_ptr<Tokenizer> make_char_tokenizer(const std::vector<uint32_t>& code_points) {
  return std::make_unique<CharTokenizer>(code_points);
}

}  // namespace atl
