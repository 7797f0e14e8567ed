// Chunked top-k with bit-packed positions: SparseLoCo's outer-gradient
// compressor (arXiv 2508.15706; ALGORITHMS.md 8.7), as codecs
//   topk-chunk       fp32 values
//   topk-chunk-2bit  2-bit values (4 bins) and one fp32 scale per chunk
// Unlike the other codecs these write the message itself (Encoded::wire):
// the payload path all-gathers those bytes and every receiver decodes them
// (add_wire), so what a real run sends, what the ledger counts and what the
// table's closed form says are one number.
//
// Selection. Each segment (a tensor of the payload with codec.topk_scope =
// tensor, the default; none given: the whole payload) is cut into chunks of C entries, the last one possibly shorter;
// a chunk of len entries keeps k_c = chunk_kept(len, C, k) entries (k when
// full): those of largest |x|, ties to the lower position, NaN never before
// a number. SparseLoCo's matrices are cut into 64 x 64 tiles; here a chunk is
// C consecutive entries of the tensor's row-major values (for a matrix
// 128 wide, 32 whole rows instead of two 64 x 64 tiles): the same density and
// index width, a different grouping.
//
// Values. fp32: the kept value rounded to float32. 2-bit: with M the
// largest kept |v| of the chunk (fp32, the chunk's scale), each kept value
// becomes the nearest of M * {-1, -1/3, 1/3, 1} (compress/two_bit.h); an
// all-zero chunk decodes to zeros.
//
// Message, for a payload of n entries, in this order (little-endian):
//   scales    2-bit only: one fp32 M per chunk, in chunk order
//   values    fp32: K float32; 2-bit: K codes, 2 bits each, packed
//   positions K offsets inside their chunk, chunk_index_bits(C) bits each, packed
// with K = sum of k_c; packed fields start at a byte boundary and fill each
// byte from its lowest bit. Entries of a chunk are sent in increasing
// position. Its size is codec_encoded_bytes(name, n) exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compress/codec.h"

namespace atl {

class ChunkTopKCodec : public Codec {
 public:
  enum class Values { kFp32, kTwoBit };
  // chunk: C >= 1; k: 1..C; segments as make_codec's (checked there).
  ChunkTopKCodec(Values values, int64_t chunk, int64_t k, std::vector<int64_t> segments);
  Encoded round_trip(const at::Tensor& x) override;
  std::string name() const override { return values_ == Values::kFp32 ? "topk-chunk" : "topk-chunk-2bit"; }
  double bytes_for(int64_t n) const override;
  bool has_wire() const override { return true; }
  // Refuses (before touching acc) a message whose size is not bytes_for(n)
  // or whose positions are outside their chunk or not increasing within it.
  void add_wire(const at::Tensor& wire, at::Tensor& acc) const override;

 private:
  struct Chunk {
    int64_t start, len, kept;
  };
  std::vector<Chunk> chunks_of(int64_t n) const;
  // Where the message's fields start (see above): scales, values, positions.
  struct Layout {
    int64_t kept = 0, bits = 0, scale_bytes = 0, value_bytes = 0, total = 0;
  };
  Layout layout(const std::vector<Chunk>& chunks) const;
  CodecSizing sizing() const;

  Values values_;
  int64_t chunk_, k_;
  std::vector<int64_t> segments_;
  std::vector<int32_t> order_;     // selection scratch, one chunk long
  std::vector<double> magnitude_;  // |x| of the chunk (NaN: -1)
};

}  // namespace atl
