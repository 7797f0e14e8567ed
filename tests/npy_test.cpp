// NumPy data: the .npy reader and writer, npy data folders, their shards and
// batch sampler, the DataSource on them, and a run of the mlp on generated
// npy images. All files are written by the tests.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "atoll/data.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/data_source.h"
#include "util/file_io.h"
#include "util/rng.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

// A .npy file by hand: magic, version major.0, the header length (2 bytes
// for 1.0, 4 for 2.0 and 3.0), `dict` padded with spaces and a '\n' to a
// multiple of 16, then `data`.
std::string npy_bytes(int major, std::string dict, const std::string& data) {
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 16 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string out = std::string("\x93NUMPY", 6) + char(major) + char(0);
  const int length_bytes = major == 1 ? 2 : 4;
  for (int k = 0; k < length_bytes; ++k) out.push_back(char((dict.size() >> (8 * k)) & 0xFF));
  return out + dict + data;
}

std::string raw(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
std::string raw(const std::vector<int64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
}

std::string npy_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const NpyError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not an NpyError: ") + e.what();
  }
  return "";
}

// ---------------------------------------------------------------- the file format

TEST(NpyFile, WriteThenReadRoundTripsEveryWritableDtype) {
  testing::TempDir dir;
  const std::vector<at::Tensor> tensors = {at::arange(6, at::kFloat).reshape({2, 3}).mul_(0.5).sub_(1),
                                           at::tensor({int64_t{-5}, int64_t{1} << 40, int64_t{0}, int64_t{7}}),
                                           at::arange(8, at::kInt).reshape({2, 2, 2}).mul_(-3),
                                           at::tensor(std::vector<uint8_t>{0, 128, 255}).reshape({3, 1}),
                                           at::empty({0, 4}, at::kFloat)};
  const char* dtypes[] = {"float32", "int64", "int32", "uint8", "float32"};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string path = dir / ("t" + std::to_string(i) + ".npy");
    write_npy(path, tensors[i]);
    const std::string bytes = read_file_bytes(path);
    const size_t header_len = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u) << "data start aligned to 64 bytes as numpy writes them";
    EXPECT_EQ(bytes[10 + header_len - 1], '\n');
    const NpyArray a = read_npy(path);
    EXPECT_EQ(a.dtype, dtypes[i]);
    EXPECT_EQ(a.shape, tensors[i].sizes().vec());
    EXPECT_EQ(a.values.scalar_type(), tensors[i].scalar_type());
    EXPECT_TRUE(at::equal(a.values, tensors[i])) << dtypes[i];
  }
  EXPECT_FALSE(atl::testing::temp_file_left(dir / "t0.npy"));
  EXPECT_THROW(write_npy(dir / "d.npy", at::zeros({2}, at::kDouble)), std::invalid_argument);
  EXPECT_THROW(write_npy(dir / "s.npy", at::scalar_tensor(1.0)), std::invalid_argument);
}

TEST(NpyFile, ReadsVersion2And3HeadersAndUint16AsInt32) {
  const std::string u16 = std::string("\x01\x00\xff\xff\x07\x00", 6);
  const NpyArray a = parse_npy(npy_bytes(2, "{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }", u16), "v2");
  EXPECT_EQ(a.dtype, "uint16");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(a.values.scalar_type(), at::kInt);
  EXPECT_TRUE(at::equal(a.values, at::tensor({1, 65535, 7}, at::kInt)));

  // 3.0, keys in another order, double quotes, no trailing comma, odd spaces.
  const NpyArray b = parse_npy(npy_bytes(3, "{ \"shape\" : ( 2 , 2 ) ,'fortran_order':False,  'descr':'<i8'}",
                                         raw(std::vector<int64_t>{1, 2, 3, 4})),
                               "v3");
  EXPECT_EQ(b.dtype, "int64");
  EXPECT_TRUE(at::equal(b.values, at::tensor(std::vector<int64_t>{1, 2, 3, 4}).reshape({2, 2})));

  const NpyArray c =
      parse_npy(npy_bytes(1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2, 1), }", "\x05\x06"), "u1");
  EXPECT_EQ(c.dtype, "uint8");
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 1}));
  const NpyArray d =
      parse_npy(npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", "\xff\xff\xff\xff"), "i4");
  EXPECT_EQ(d.values.item<int32_t>(), -1);
}

TEST(NpyFile, BadInputsThrowNpyErrorsThatStartWithTheSourceAndNameTheProblem) {
  const std::string f4x6 = raw(std::vector<float>(6, 1.0f));
  auto v1 = [](const std::string& dict, const std::string& data) { return npy_bytes(1, dict, data); };
  auto hdr = [](const std::string& descr, const std::string& order, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  };
  std::string past_end = v1(hdr("<f4", "False", "(6,)"), f4x6);
  past_end[8] = '\xff';
  past_end[9] = '\x7f';
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"wrong magic", "\x93NUMPZ\x01\x00\x00\x00", "magic"},
      {"empty file", "", "magic"},
      {"version 4.0", std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '),
       "version 4.0 is not supported"},
      {"Fortran order", v1(hdr("<f4", "True", "(2, 3)"), f4x6), "np.ascontiguousarray"},
      {"float16", v1(hdr("<f2", "False", "(6,)"), std::string(12, '\0')), "unsupported dtype '<f2' (float16)"},
      {"float64", v1(hdr("<f8", "False", "(3,)"), std::string(24, '\0')), "allowed: '<f4' float32"},
      {"big-endian", v1(hdr(">f4", "False", "(6,)"), f4x6), "big-endian"},
      {"object array", v1(hdr("|O", "False", "(2,)"), std::string(16, '\0')), "object arrays"},
      {"structured", v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", f4x6),
       "structured arrays"},
      {"truncated data", v1(hdr("<f4", "False", "(2, 3)"), f4x6.substr(0, 20)),
       "truncated data: shape (2, 3) of float32 needs 24 bytes but 20"},
      {"trailing bytes", v1(hdr("<f4", "False", "(2, 3)"), f4x6 + "abcd"), "4 trailing bytes"},
      {"header length past the end", past_end, "runs past the end of the file"},
      {"0-d shape", v1(hdr("<f4", "False", "()"), f4x6.substr(0, 4)), "0-d array"},
      {"negative dimension", v1(hdr("<f4", "False", "(-6,)"), f4x6), "dimension 0 of the shape is negative"},
      {"non-integer dimension", v1(hdr("<f4", "False", "(2.5,)"), f4x6), "not an integer"},
      {"huge shape", v1(hdr("<f4", "False", "(1099511627776, 1099511627776)"), f4x6), "too large"},
      {"huge dimension", v1(hdr("<f4", "False", "(99999999999999999999999,)"), f4x6), "larger than 2^40"},
      {"extra key", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", f4x6), "unexpected key 'x'"},
      {"missing key", v1("{'descr': '<f4', 'fortran_order': False}", f4x6), "lacks 'shape'"},
      {"duplicate key", v1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", f4x6),
       "appears twice"},
      {"not a dict", v1("['descr', '<f4']", f4x6), "does not start with '{'"},
      {"text after the dict", v1(hdr("<f4", "False", "(6,)") + " x", f4x6), "after the closing '}'"},
  };
  for (const Case& c : cases) {
    const std::string msg = npy_error_of([&] { parse_npy(c.bytes, "bad.npy"); });
    EXPECT_EQ(msg.rfind("bad.npy: ", 0), 0u) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.what << ": " << msg;
  }
}

TEST(NpyFile, MissingFileIsAnNpyErrorNamingThePath) {
  testing::TempDir dir;
  const std::string msg = npy_error_of([&] { read_npy(dir / "nowhere.npy"); });
  EXPECT_EQ(msg.rfind(dir / "nowhere.npy", 0), 0u) << msg;
  EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- data folders

// Writes an npy folder: inputs (n, 2) float32 whose row i is (i, -i), labels
// i % classes as int64 (shape (n)), for `train` and `val` examples.
void write_folder(const std::string& dir, int64_t train, int64_t val, int64_t classes = 3) {
  for (auto [split, n] : {std::pair<const char*, int64_t>{"train", train}, {"val", val}}) {
    const at::Tensor i = at::arange(n, at::kFloat);
    write_npy(fs::path(dir) / (std::string(split) + "_inputs.npy"), at::stack({i, -i}, 1));
    write_npy(fs::path(dir) / (std::string(split) + "_targets.npy"), at::arange(n, at::kLong).remainder(classes));
  }
}

TEST(NpyData, LoadsAFolderAndRefusesMismatchedMissingOrDifferingFiles) {
  testing::TempDir dir;
  write_folder(dir.str(), 10, 4);
  const NpyData d = load_npy_data(dir.str());
  EXPECT_EQ(d.train_size(), 10);
  EXPECT_EQ(d.val_size(), 4);
  EXPECT_EQ(d.inputs_dtype, "float32");
  EXPECT_EQ(d.targets_dtype, "int64");

  write_npy(dir / "train_targets.npy", at::zeros({9}, at::kLong));
  std::string msg = npy_error_of([&] { load_npy_data(dir.str()); });
  EXPECT_NE(msg.find("train_targets.npy: mismatched lengths: 9 targets but train_inputs.npy holds 10"),
            std::string::npos)
      << msg;

  write_folder(dir.str(), 10, 4);
  write_npy(dir / "val_inputs.npy", at::zeros({4, 3}));
  msg = npy_error_of([&] { load_npy_data(dir.str()); });
  EXPECT_NE(msg.find("same per-example shape"), std::string::npos) << msg;

  write_folder(dir.str(), 10, 4);
  write_npy(dir / "val_targets.npy", at::zeros({4}, at::kInt));
  msg = npy_error_of([&] { load_npy_data(dir.str()); });
  EXPECT_NE(msg.find("dtype int32 but train_targets.npy is int64"), std::string::npos) << msg;

  write_folder(dir.str(), 10, 0);
  msg = npy_error_of([&] { load_npy_data(dir.str()); });
  EXPECT_NE(msg.find("validation split is empty"), std::string::npos) << msg;

  write_folder(dir.str(), 10, 4);
  const std::string half = read_file_bytes(dir / "val_inputs.npy");
  write_file_atomic(dir / "val_inputs.npy", half.substr(0, half.size() - 3));
  msg = npy_error_of([&] { load_npy_data(dir.str()); });
  EXPECT_EQ(msg.rfind(dir / "val_inputs.npy: truncated data", 0), 0u) << msg;

  fs::remove(dir / "val_targets.npy");
  fs::remove(dir / "train_inputs.npy");
  msg = npy_error_of([&] { load_npy_data(dir.str()); });
  EXPECT_NE(msg.find("missing train_inputs.npy, val_targets.npy; an npy data folder holds"), std::string::npos) << msg;
  msg = npy_error_of([&] { load_npy_data(dir / "nowhere"); });
  EXPECT_NE(msg.find("no such folder"), std::string::npos) << msg;
}

TEST(NpyData, ShardsAreDisjointCoverAllAndNoniidIsSortedByLabel) {
  testing::TempDir dir;
  write_folder(dir.str(), 23, 4, 5);
  const NpyData d = load_npy_data(dir.str());
  const at::Tensor labels = d.train_targets;
  for (const char* mode : {"iid", "noniid"}) {
    std::vector<int> seen(23, 0);
    std::vector<int64_t> labels_in_order;
    for (int64_t w = 0; w < 3; ++w) {
      const auto idx = npy_shard(d, w, 3, mode, 11);
      EXPECT_GE(idx.size(), 7u) << mode;
      if (std::string(mode) == "iid") {
        EXPECT_TRUE(std::is_sorted(idx.begin(), idx.end()));
      }
      for (int64_t i : idx) ++seen[size_t(i)];
      // noniid shards are contiguous runs of the label-sorted order.
      std::vector<int64_t> ls;
      for (int64_t i : idx) ls.push_back(labels[i].item<int64_t>());
      std::sort(ls.begin(), ls.end());
      labels_in_order.insert(labels_in_order.end(), ls.begin(), ls.end());
    }
    for (int c : seen) EXPECT_EQ(c, 1) << mode << ": every example in exactly one shard";
    if (std::string(mode) == "noniid")
      EXPECT_TRUE(std::is_sorted(labels_in_order.begin(), labels_in_order.end()));
    else
      EXPECT_FALSE(std::is_sorted(labels_in_order.begin(), labels_in_order.end()));
  }
  // The same seed on every worker gives the same partition; another seed another.
  EXPECT_EQ(npy_shard(d, 1, 3, "iid", 11), npy_shard(d, 1, 3, "iid", 11));
  EXPECT_NE(npy_shard(d, 1, 3, "iid", 11), npy_shard(d, 1, 3, "iid", 12));

  // Targets that are not one label per example: noniid keeps file order.
  write_npy(dir / "train_targets.npy", at::zeros({23, 2}, at::kLong));
  write_npy(dir / "val_targets.npy", at::zeros({4, 2}, at::kLong));
  const NpyData seq = load_npy_data(dir.str());
  EXPECT_EQ(npy_shard(seq, 0, 3, "noniid", 0), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));

  const std::string msg = testing::invalid_argument_message([&] { npy_shard(d, 0, 24, "iid", 0); });
  EXPECT_NE(msg.find("23 training examples cannot give each of 24 workers one"), std::string::npos) << msg;
  EXPECT_THROW(npy_shard(d, 3, 3, "iid", 0), std::invalid_argument);
  EXPECT_THROW(npy_shard(d, 0, 3, "sorted", 0), std::invalid_argument);
}

TEST(NpyData, SamplerIsDeterministicDrawsFromItsShardAndResumesFromItsState) {
  testing::TempDir dir;
  write_folder(dir.str(), 20, 4);
  // uint8 inputs of shape (20, 2, 2) holding their row index: integers come out as int64.
  write_npy(dir / "train_inputs.npy", at::arange(20, at::kByte).reshape({20, 1, 1}).expand({20, 2, 2}).contiguous());
  write_npy(dir / "val_inputs.npy", at::zeros({4, 2, 2}, at::kByte));
  const NpyData d = load_npy_data(dir.str());
  const auto shard = npy_shard(d, 1, 2, "iid", 5);
  NpyBatchSampler a(d, shard, 99), b(d, shard, 99);
  at::Tensor xa, ya, xb, yb;
  a.next(6, xa, ya);
  b.next(6, xb, yb);
  EXPECT_EQ(xa.sizes().vec(), (std::vector<int64_t>{6, 2, 2}));
  EXPECT_EQ(ya.sizes().vec(), (std::vector<int64_t>{6}));
  EXPECT_EQ(xa.scalar_type(), at::kLong);
  EXPECT_EQ(ya.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(xa, xb));
  EXPECT_TRUE(at::equal(ya, yb));
  const std::set<int64_t> in_shard(shard.begin(), shard.end());
  for (int64_t r = 0; r < 6; ++r) {
    const int64_t row = xa[r][0][0].item<int64_t>();
    EXPECT_EQ(in_shard.count(row), 1u) << "row " << row << " is not in the shard";
    EXPECT_EQ(ya[r].item<int64_t>(), row % 3) << "targets travel with their inputs";
  }
  const uint64_t saved = a.state();
  at::Tensor x1, y1, x2, y2;
  a.next(5, x1, y1);
  a.set_state(saved);
  a.next(5, x2, y2);
  EXPECT_TRUE(at::equal(x1, x2));
  NpyBatchSampler other(d, shard, 100);
  other.next(6, xb, yb);
  EXPECT_FALSE(at::equal(xa, xb));
  EXPECT_THROW(NpyBatchSampler(d, {}, 0), std::invalid_argument);
  EXPECT_THROW(NpyBatchSampler(d, {20}, 0), std::invalid_argument);
}

TEST(NpyData, TokenIdsOutsideTheVocabularyAreNamedWithTheirExample) {
  testing::TempDir dir;
  const at::Tensor tokens = at::arange(24, at::kInt).remainder(7).reshape({4, 6});
  write_npy(dir / "train_inputs.npy", tokens);
  write_npy(dir / "train_targets.npy", tokens);
  write_npy(dir / "val_inputs.npy", tokens.narrow(0, 0, 2).contiguous());
  at::Tensor bad = tokens.narrow(0, 0, 2).clone();
  bad[1][3] = 9;
  write_npy(dir / "val_targets.npy", bad);
  const NpyData d = load_npy_data(dir.str());
  EXPECT_NO_THROW(check_npy_token_ids(d, 10, dir.str()));
  const std::string msg = npy_error_of([&] { check_npy_token_ids(d, 7, dir.str()); });
  EXPECT_NE(msg.find("val_targets.npy: example 1 holds token id 9, outside [0, data.vocab_size = 7)"),
            std::string::npos)
      << msg;
}

// ---------------------------------------------------------------- DataSource

Config npy_config(const std::string& dir, const std::string& kind) {
  Config cfg;
  cfg.data.dataset = "npy";
  cfg.data.dir = dir;
  cfg.model.kind = kind;
  cfg.model.mlp_hidden = 16;
  cfg.train.batch_size = 4;
  cfg.train.eval_batches = 2;
  return cfg;
}

// Generated images: class k lights up row 2k+3 of the 28 x 28 image, plus
// noise; (n, 1, 28, 28) float32 and (n) int64 labels.
void write_images(const std::string& dir, int64_t train, int64_t val, uint64_t seed) {
  uint64_t state = seed;
  for (auto [split, n] : {std::pair<const char*, int64_t>{"train", train}, {"val", val}}) {
    at::Tensor x = at::empty({n, 1, 28, 28}, at::kFloat), y = at::empty({n}, at::kLong);
    float* xp = x.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t label = int64_t(splitmix64(state) % 10);
      y[i] = label;
      for (int64_t k = 0; k < 784; ++k) xp[i * 784 + k] = float(uniform01(state) * 0.3);
      for (int64_t c = 0; c < 28; ++c) xp[i * 784 + (2 * label + 3) * 28 + c] += 1.0f;
    }
    write_npy(fs::path(dir) / (std::string(split) + "_inputs.npy"), x);
    write_npy(fs::path(dir) / (std::string(split) + "_targets.npy"), y);
  }
}

TEST(NpySource, ImagesGiveEvalBatchesInOrderAndFullEvalRowsEqualTheFile) {
  testing::TempDir dir;
  write_images(dir.str(), 12, 10, 1);
  const DataSource data(npy_config(dir.str(), "mlp"));
  EXPECT_EQ(data.tokens_per_example(), 1);
  EXPECT_EQ(data.train_tokens(), 12);
  EXPECT_EQ(data.vocab_size(), 10);
  EXPECT_EQ(data.full_eval_examples(), 10);
  const at::Tensor vx = read_npy(dir / "val_inputs.npy").values, vy = read_npy(dir / "val_targets.npy").values;
  ASSERT_EQ(data.eval_batches().size(), 2u);
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(at::equal(data.eval_batches()[size_t(b)].first, vx.narrow(0, 4 * b, 4)));
    EXPECT_TRUE(at::equal(data.eval_batches()[size_t(b)].second, vy.narrow(0, 4 * b, 4)));
  }
  const Batch full = data.full_eval_batch(3, 7);
  EXPECT_TRUE(at::equal(full.first, vx.narrow(0, 3, 7)));
  EXPECT_TRUE(at::equal(full.second, vy.narrow(0, 3, 7)));
  EXPECT_THROW(data.full_eval_batch(4, 7), std::out_of_range);
  auto stream = data.stream(1, 2, 5);
  const Batch b = stream->next(3);
  EXPECT_EQ(b.first.sizes().vec(), (std::vector<int64_t>{3, 1, 28, 28}));
  EXPECT_EQ(b.second.scalar_type(), at::kLong);

  // A cnn needs (N, 1, 28, 28); an mlp takes (N, 784) too.
  write_npy(dir / "train_inputs.npy", at::zeros({12, 784}));
  write_npy(dir / "val_inputs.npy", at::zeros({10, 784}));
  EXPECT_NO_THROW(DataSource(npy_config(dir.str(), "mlp")));
  const std::string msg = npy_error_of([&] { DataSource(npy_config(dir.str(), "cnn")); });
  EXPECT_NE(msg.find("train_inputs.npy: examples of shape (784,), but model.kind = cnn needs 28 x 28 images"),
            std::string::npos)
      << msg;
}

TEST(NpySource, TokenSequencesCountTTokensPerExampleAndCheckTheVocabulary) {
  testing::TempDir dir;
  const at::Tensor seq = at::arange(5 * 9, at::kLong).remainder(11).reshape({5, 9});
  write_npy(dir / "train_inputs.npy", seq.narrow(1, 0, 8).contiguous());
  write_npy(dir / "train_targets.npy", seq.narrow(1, 1, 8).contiguous());
  write_npy(dir / "val_inputs.npy", seq.narrow(1, 0, 8).narrow(0, 0, 3).contiguous());
  write_npy(dir / "val_targets.npy", seq.narrow(1, 1, 8).narrow(0, 0, 3).contiguous());
  Config cfg = npy_config(dir.str(), "gpt");
  cfg.model.block_size = 8;
  cfg.data.vocab_size = 11;
  const DataSource data(cfg);
  EXPECT_EQ(data.tokens_per_example(), 8);
  EXPECT_EQ(data.train_tokens(), 5 * 8);
  EXPECT_EQ(data.vocab_size(), 11);
  EXPECT_EQ(data.full_eval_examples(), 3);
  EXPECT_EQ(data.eval_batches()[0].first.sizes().vec(), (std::vector<int64_t>{3, 8}));

  cfg.data.vocab_size = 10;
  std::string msg = npy_error_of([&] { DataSource{cfg}; });
  EXPECT_NE(msg.find("token id 10, outside [0, data.vocab_size = 10)"), std::string::npos) << msg;
  cfg.data.vocab_size = 11;
  cfg.model.block_size = 4;
  msg = npy_error_of([&] { DataSource{cfg}; });
  EXPECT_NE(msg.find("sequences of 8 tokens, but model.block_size = 4; set model.block_size = 8"), std::string::npos)
      << msg;
}

// ---------------------------------------------------------------- end to end

TEST(NpyTrain, MlpOnGeneratedNpyImagesLowersTheLossAndFinalEvalCountsEveryExample) {
  testing::TempDir dir;
  write_images(dir.str(), 240, 50, 7);
  Config cfg = npy_config(dir.str(), "mlp");
  cfg.model.mlp_hidden = 32;
  cfg.network.compute_time = "flops";
  cfg.strategy.name = "ddp";
  cfg.strategy.workers = 2;
  cfg.optim.lr = 1e-2;
  cfg.optim.warmup_steps = 2;
  cfg.train.steps = 30;
  cfg.train.batch_size = 16;
  cfg.train.eval_every = 10;
  cfg.train.eval_batch_size = 16;  // the full evaluation in 4 batches, the last one short
  cfg.train.log_every = 5;
  cfg.run.progress = false;
  const RunSummary s = simulate(cfg);
  double first_val = -1;
  for (const auto& e : events_of(s))
    if (e["event"] == "eval" && first_val < 0) first_val = e["val_loss"].get<double>();
  EXPECT_EQ(s.final_eval, "full");
  EXPECT_EQ(s.final_eval_examples, 50);
  EXPECT_EQ(s.final_eval_tokens, 50);
  ASSERT_GT(first_val, 0);
  EXPECT_LT(s.final_val_loss, std::log(10.0) * 0.5) << "first evaluation " << first_val;
  EXPECT_LT(s.final_val_loss, first_val);
}

}  // namespace
}  // namespace atl
