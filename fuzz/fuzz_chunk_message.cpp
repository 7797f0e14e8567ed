// libFuzzer target: ChunkTopKCodec::add_wire() (src/compress/chunk_topk.cpp),
// which every rank of a real SparseLoCo run applies to each peer's
// pseudo-gradient message (topk-chunk, topk-chunk-2bit).
//
// Input: a 7-byte header choosing the codec and its sizing, then the
// message. Header: byte 0 bit 0 = 2-bit values, bit 1 = float64 sum, bit 7 =
// cut or zero-pad the message to the size the sizing expects (so most inputs
// reach the position checks instead of the size check); byte 1: C - 1
// (C in 1..256); byte 2: k - 1 taken mod C; bytes 3-4: n mod 4097; bytes
// 5-6: the first tensor's length mod (n + 1), the rest the second's.
//
// For a message it accepts: it changed no more entries than the sizing's
// kept count, and decoding it again into a fresh sum gives the same values.
// Expected: std::invalid_argument. Findings: crashes, sanitizer reports, any
// other exception, an accepted message that breaks those properties.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "compress/chunk_topk.h"
#include "compress/codec_names.h"

namespace {

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_chunk_message: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 7) return 0;
  const bool two_bit = data[0] & 1, wide = data[0] & 2, fit = data[0] & 0x80;
  const int64_t chunk = int64_t(data[1]) + 1;
  const int64_t k = int64_t(data[2]) % chunk + 1;
  const int64_t n = (int64_t(data[3]) | int64_t(data[4]) << 8) % 4097;
  const int64_t first = (int64_t(data[5]) | int64_t(data[6]) << 8) % (n + 1);
  const std::vector<int64_t> segments = {first, n - first};
  const atl::ChunkTopKCodec codec(two_bit ? atl::ChunkTopKCodec::Values::kTwoBit : atl::ChunkTopKCodec::Values::kFp32,
                                  chunk, k, segments);
  int64_t bytes = int64_t(size) - 7;
  if (fit) bytes = int64_t(codec.bytes_for(n));
  at::Tensor message = at::zeros({bytes}, at::kByte);
  const int64_t given = std::min<int64_t>(bytes, int64_t(size) - 7);
  if (given > 0) std::memcpy(message.data_ptr<uint8_t>(), data + 7, size_t(given));
  const auto dtype = wide ? at::kDouble : at::kFloat;
  at::Tensor acc = at::zeros({n}, dtype);
  try {
    codec.add_wire(message, acc);
  } catch (const std::invalid_argument&) {
    if (acc.ne(0).sum().item<int64_t>() != 0) fail("a refused message changed the sum");
    return 0;
  }
  atl::CodecSizing s;
  s.chunk = chunk;
  s.chunk_topk = k;
  s.topk_segments = segments;
  int64_t kept = 0;
  for (int64_t len : segments)
    for (int64_t lo = 0; lo < len; lo += chunk) kept += atl::chunk_kept(std::min(chunk, len - lo), chunk, k);
  if (acc.ne(0).sum().item<int64_t>() > kept) fail("more entries changed than the message holds");
  at::Tensor again = at::zeros({n}, dtype);
  codec.add_wire(message, again);
  if (!at::equal(acc.isnan(), again.isnan()) || !at::equal(at::nan_to_num(acc), at::nan_to_num(again)))
    fail("the same message decoded to different values");
  return 0;
}
