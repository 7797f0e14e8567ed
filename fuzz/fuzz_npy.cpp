// libFuzzer target: NumPy data. Either bytes through parse_npy()
// (src/data/npy.cpp) with the encode_npy() round trip, or an npy data folder
// through load_npy_data(), check_npy_token_ids(), npy_shard() and the batch
// sampler (src/data/npy_data.cpp), used the way DataSource
// (src/train/data_source.cpp) uses them.
//
// Input layout (fuzz/make_npy_seeds.py writes the seeds in it):
//   byte 0      bit 0 clear: the rest is one .npy file
//               bit 0 set: a folder; bit 1 noniid shards (else iid),
//               bits 2-4 workers - 1, bit 5 check token ids
//   folder only:
//   byte 1      bits 0-3: leave out train_inputs, train_targets, val_inputs,
//               val_targets (the missing-file path)
//   byte 2      vocab_size - 1 for the token id check
//   bytes 3-8   u16 LE lengths of train_inputs, train_targets, val_inputs
//   then        those files' bytes, and the rest is val_targets.npy
// Lengths that run past the end of the input are cut to what is there.
//
// The folder lives in /dev/shm (one per fuzzing process; see folder()).
// Expected: NpyError, std::invalid_argument (too few examples for the
// workers). Findings: crashes, sanitizer reports, any other exception
// (c10::Error from a tensor op included), timeouts, and a broken invariant
// below (reported with abort()).
#include <unistd.h>

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/data.h"
#include "scratch_folder.h"

namespace {

namespace fs = std::filesystem;

const fs::path& folder() { return atl_fuzz::scratch_folder("npy"); }

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_npy: invariant broken: %s\n", what.c_str());
  std::abort();
}

void put_file(const char* name, bool present, const uint8_t* data, size_t size) {
  atl_fuzz::put_file(folder() / name, present, data, size);
}

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// One file: parse, check what was parsed, and encode it back.
void one_file(const uint8_t* data, size_t size) {
  atl::NpyArray a;
  try {
    a = atl::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "input.npy");
  } catch (const atl::NpyError&) {
    return;
  }
  int64_t n = 1;
  for (int64_t d : a.shape) n *= d;
  if (a.shape.empty() || a.values.sizes().vec() != a.shape || a.values.numel() != n)
    broken("parsed shape and tensor disagree");
  // write then read gives the same values (uint16 comes back as its int32),
  // compared as bytes: at::equal calls NaN unequal to itself.
  const std::string encoded = atl::encode_npy(a.values);
  const atl::NpyArray b = atl::parse_npy(encoded, "round trip");
  if (b.shape != a.shape || atl::encode_npy(b.values) != encoded) broken("encode/parse round trip changed the array");
  if (a.dtype != "uint16" && b.dtype != a.dtype) broken("round trip changed the dtype");
}

void one_folder(const uint8_t* data, size_t size) {
  if (size < 9) return;
  const uint8_t flags = data[0];
  const std::string mode = (flags & 2) ? "noniid" : "iid";
  const int64_t workers = int64_t((flags >> 2) & 7) + 1;
  const bool check_tokens = flags & 32;
  const uint8_t omit = data[1];
  const int64_t vocab = int64_t(data[2]) + 1;
  size_t rest = size - 9;
  const uint8_t* p = data + 9;
  const char* names[] = {"train_inputs.npy", "train_targets.npy", "val_inputs.npy", "val_targets.npy"};
  for (int i = 0; i < 4; ++i) {
    const size_t len = i < 3 ? std::min<size_t>(u16(data + 3 + 2 * i), rest) : rest;
    put_file(names[i], !(omit & (1 << i)), p, len);
    p += len;
    rest -= len;
  }

  atl::NpyData d;
  try {
    d = atl::load_npy_data(folder().string());
    if (check_tokens) atl::check_npy_token_ids(d, vocab, folder().string());
  } catch (const atl::NpyError&) {
    return;
  }
  const int64_t n = d.train_size();
  if (n < 1 || d.val_size() < 1 || d.train_targets.size(0) != n || d.val_targets.size(0) != d.val_size())
    broken("load_npy_data accepted empty or mismatched splits");
  // What training does with the loaded data (DataSource): shards that are
  // disjoint and cover the split, a batch from each, validation rows.
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (int64_t w = 0; w < workers; ++w) {
    std::vector<int64_t> shard;
    try {
      shard = atl::npy_shard(d, w, workers, mode, 1337);
    } catch (const std::invalid_argument&) {  // fewer examples than workers
      if (n >= workers) broken("npy_shard refused although every worker can get an example");
      return;
    }
    if (shard.empty()) broken("an empty shard was handed out");
    for (int64_t i : shard) {
      if (i < 0 || i >= n) broken("shard index out of range");
      ++seen[static_cast<size_t>(i)];
    }
    atl::NpyBatchSampler sampler(d, std::move(shard), 7);
    at::Tensor x, y;
    sampler.next(3, x, y);
    if (x.size(0) != 3 || y.size(0) != 3 || x.dim() != d.train_inputs.dim() || y.dim() != d.train_targets.dim())
      broken("batch shapes do not follow the data");
    if (d.inputs_dtype != "float32" && x.scalar_type() != at::kLong) broken("integer inputs not handed out as int64");
  }
  for (int c : seen)
    if (c != 1) broken("shards are not disjoint or do not cover the split");
  const int64_t m = std::min<int64_t>(d.val_size(), 2);
  atl::npy_as_batch(d.val_inputs.narrow(0, 0, m));
  atl::npy_as_batch(d.val_targets.narrow(0, 0, m));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1)
    one_folder(data, size);
  else
    one_file(data + 1, size - 1);
  return 0;
}
