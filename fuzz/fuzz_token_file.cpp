// libFuzzer target: a prepared token folder (meta.json, train.bin, val.bin)
// read by load_token_data() (src/data/token_data.cpp), then used the way
// DataSource (src/train/data_source.cpp) uses it: per-worker shards, a batch
// sampler on each shard and the fixed validation batches.
//
// Input layout (fuzz/make_token_seeds.py writes the seeds in it):
//   byte 0      flags: bit 0 write meta.json, bit 1 write train.bin,
//               bit 2 write val.bin, bit 3 pass a vocab_size hint,
//               bit 4 noniid shards (else iid), bits 5-7 workers - 1
//   bytes 1-2   u16 LE vocab_size hint (used when bit 3 is set)
//   bytes 3-4   u16 LE length of meta.json
//   bytes 5-6   u16 LE length of train.bin
//   byte 7      block_size - 1 (block sizes 1..256)
//   then        meta.json bytes, train.bin bytes, and the rest is val.bin
// Lengths that run past the end of the input are cut to what is there.
//
// The folder lives in /dev/shm (one per fuzzing process; see folder()). Expected:
// std::runtime_error / std::invalid_argument with a message. Findings:
// crashes, sanitizer reports, any other exception, timeouts.
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

const fs::path& folder() { return atl_fuzz::scratch_folder("token"); }

void put_file(const char* name, bool present, const uint8_t* data, size_t size) {
  atl_fuzz::put_file(folder() / name, present, data, size);
}

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  const uint8_t flags = data[0];
  const int64_t hint = (flags & 8) ? u16(data + 1) : 0;
  const size_t meta_len = std::min<size_t>(u16(data + 3), size - 8);
  const size_t train_len = std::min<size_t>(u16(data + 5), size - 8 - meta_len);
  const int64_t block_size = int64_t(data[7]) + 1;
  const int64_t workers = int64_t(flags >> 5) + 1;
  const std::string mode = (flags & 16) ? "noniid" : "iid";
  const uint8_t* meta = data + 8;
  const uint8_t* train = meta + meta_len;
  const uint8_t* val = train + train_len;
  put_file("meta.json", flags & 1, meta, meta_len);
  put_file("train.bin", flags & 2, train, train_len);
  put_file("val.bin", flags & 4, val, size - 8 - meta_len - train_len);

  atl::TokenData d;
  try {
    d = atl::load_token_data(folder().string(), hint);
  } catch (const std::runtime_error&) {
    return 0;
  } catch (const std::invalid_argument&) {
    return 0;
  }
  // What training does with the loaded data (DataSource).
  for (int64_t w = 0; w < workers; ++w) {
    try {
      auto ranges = atl::shard_ranges(d.train, w, workers, mode, 1337, 64);
      atl::TokenBatchSampler sampler(d.train, std::move(ranges), block_size, 7);
      at::Tensor x, y;
      sampler.next(3, x, y);
    } catch (const std::invalid_argument&) {  // shard too small for block_size
    }
  }
  try {
    atl::fixed_token_batches(d.val, block_size, 2, 2, 99);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
