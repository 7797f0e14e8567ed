// The codec table: one line per payload codec with its name, its traits and
// the exact size of its encoded payload. make_codec(), config validation,
// `atoll train --help`, `atoll cost`, the payload path and the codec
// benchmark read it, so adding a codec is its encoder (codec.cpp) plus one
// line here. Torch-free (config and the fuzz build use it without LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// Elements per scale block for int8 / fp8 / fp4 / 2bit / sign. 128 keeps the
// fp32 scale at 4/128 = 0.03 bytes/element (6% on top of fp4's 0.5, 3% on
// int8's 1) while keeping the blocks local: e3m0 flushes everything below
// max/128 of its block to zero, so one outlier must not set the scale of
// thousands of elements (torchft's 2048 would, MX formats use 32 with 1-byte
// scales).
inline constexpr int64_t kDefaultCodecBlock = 128;
inline constexpr double kDefaultTopkDensity = 0.01;
// The chunked top-k codecs' defaults: SparseLoCo's (arXiv 2508.15706) k = 64
// of every C = 4,096 entries (1.56%), as in the Covenant-72B run.
inline constexpr int64_t kDefaultChunk = 4096;
inline constexpr int64_t kDefaultChunkTopk = 64;

// What an encoded payload's size depends on besides its length: the [codec]
// knobs and the wire's index width.
struct CodecSizing {
  int64_t block = kDefaultCodecBlock;         // block codecs (int8, fp8, fp4, 2bit, sign): elements per fp32 scale
  double topk_density = kDefaultTopkDensity;  // topk: fraction of entries kept
  int64_t index_bytes = 4;                    // topk: bytes per sent index
  std::vector<int64_t> topk_segments;         // topk, topk-chunk*: sizes selected separately; empty: the payload is one
  int64_t chunk = kDefaultChunk;           // topk-chunk*: C, entries per chunk (a segment's last chunk may be shorter)
  int64_t chunk_topk = kDefaultChunkTopk;  // topk-chunk*: k, entries kept per full chunk
};

// An encoded payload's bytes by part: what the ledger's split by part and
// `atoll cost` show. The whole message is their sum.
struct CodecBytes {
  double values = 0;   // the values (or their codes)
  double indices = 0;  // the kept positions (sparse codecs)
  double scales = 0;   // per-block or per-chunk scales
  double total() const { return values + indices + scales; }
};

struct CodecInfo {
  const char* name;
  const char* shorthand_for;  // "fp4" is fp4-e3m0; nullptr if a name of its own
  // Keeps only some positions and sends their indices: the receivers learn
  // the positions from the payload, so different workers' payloads cannot be
  // summed hop by hop (all-gathered instead), and a payload whose positions
  // the receivers must already know (SPARTA's) cannot use it.
  bool sparse;
  // Sends the values as they are (fp32): nothing to encode or re-quantize.
  bool uncompressed;
  // Biased enough that it needs error feedback to train (drops entries, or
  // has 1 or 2 bits): with codec.error_feedback (the default) each worker keeps
  // what the codec lost and adds it to its next payload. The unbiased-ish
  // rounding codecs (fp16 to fp4, fp8) are used without.
  bool feedback;
  // Bytes of an encoded payload of n >= 0 elements, by part: values, block
  // scales, indices. The encoder counts their sum (CodecTable tests, every codec).
  CodecBytes (*encoded_parts)(int64_t n, const CodecSizing& sizing);
};

// Every codec, in the order help and errors list them.
const std::vector<CodecInfo>& codec_table();
// The codec named `name` (a shorthand included), or nullptr.
const CodecInfo* find_codec(const std::string& name);

// Names accepted by make_codec (compress/codec.h), in table order.
const std::vector<std::string>& codec_names();
// The codec named `name`'s traits; throw std::invalid_argument listing the
// names for an unknown one.
bool codec_is_sparse(const std::string& name);
bool codec_is_uncompressed(const std::string& name);
bool codec_needs_feedback(const std::string& name);
// Exact encoded size of n elements under codec `name` (what the simulator's
// ledger charges for that payload, Encoded::bytes). Throws
// std::invalid_argument for an unknown name, n < 0, sizing out of range, or
// topk segments that do not add up to n.
double codec_encoded_bytes(const std::string& name, int64_t n, const CodecSizing& sizing = {});
// The same size by part (values, indices, scales); same checks.
CodecBytes codec_encoded_parts(const std::string& name, int64_t n, const CodecSizing& sizing = {});
// The segments a payload of n elements is selected in (top-k, chunked
// top-k): `segments`, which must add up to n (else std::invalid_argument
// naming `codec`), or, when empty, the whole payload.
std::vector<int64_t> payload_segments(int64_t n, const std::vector<int64_t>& segments, const std::string& codec);
// The top-k rule: k = max(1, round(density * n)) of n >= 1 entries, 0 of none.
int64_t topk_kept(int64_t n, double density);
// The chunked top-k rule: a chunk of len <= chunk entries keeps k_c =
// chunk_topk when full, else max(1, round(chunk_topk * len / chunk)) (the same
// density), at most len; 0 of none.
int64_t chunk_kept(int64_t len, int64_t chunk, int64_t chunk_topk);
// Bits of a position inside a chunk of `chunk` entries: ceil(log2(chunk)),
// at least 1 (12 for SparseLoCo's 4,096).
int64_t chunk_index_bits(int64_t chunk);
// Largest chunk: positions stay within 24 bits.
inline constexpr int64_t kMaxChunk = int64_t(1) << 24;
// 1 <= chunk <= kMaxChunk and 1 <= chunk_topk <= chunk, else
// std::invalid_argument saying what is allowed.
void check_chunk_sizing(int64_t chunk, int64_t chunk_topk);

// "fp32 | fp16 | bf16 | int8 | fp4 (= fp4-e3m0) | fp4-e2m1 | topk": every
// codec, each shorthand with the name it stands for (help strings).
std::string codec_choices();
// The codecs that keep every entry's position (not sparse) and need no error
// feedback, shorthands only: for payloads whose entries change from call to
// call and whose positions the receivers must already know (SPARTA's).
std::string dense_codec_choices();

// `key` names a codec ("diloco.codec = 'fp3': allowed values are ...").
void validate_codec_key(const std::string& key, const std::string& name, std::vector<std::string>& errors);
// codec.topk_scope's values: "tensor" (per tensor, the default) | "global".
const std::vector<std::string>& topk_scopes();
// The [codec] section: the knobs shared by every codec key.
void validate_codec_section(const CodecConfig& c, std::vector<std::string>& errors);

}  // namespace atl
