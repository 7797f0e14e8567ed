// The checkpoint file format, without LibTorch: named records (integers,
// reals, text, raw tensors) in one length-prefixed body with a checksum.
//
//   "ATOLLCKP"  u32 version  u64 body_size  body  u64 fnv1a64(body)
//   body: u32 count, then per record: u8 kind, u16 name length, name, value
//     integer: i64   real: f64   text: u64 length, bytes
//     tensor:  u8 dtype code, u8 ndim, i64 dims[ndim], u64 byte count, bytes
//
// Values are stored little-endian (the byte order of every host atoll
// builds on). parse_checkpoint() checks every length against the bytes it
// has, so a truncated or corrupted file is an error, never a crash: this is
// the loader the fuzz target drives.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/state.h"  // CheckpointError

namespace atl {

enum class RecordKind : uint8_t { Integer = 1, Real = 2, Text = 3, Tensor = 4 };

// Element types a tensor record may hold (codes are part of the format).
enum class ElementType : uint8_t {
  Float32 = 0,
  Float64 = 1,
  Int64 = 2,
  Int32 = 3,
  UInt8 = 4,
  Float16 = 5,
  BFloat16 = 6,
  Int16 = 7,
  Bool = 8
};
// Bytes per element, or 0 for a code the format does not define.
int64_t element_size(uint8_t code);

struct CheckpointRecord {
  RecordKind kind = RecordKind::Integer;
  int64_t integer = 0;
  double real = 0;
  std::string text;  // text records; a tensor's raw bytes
  ElementType element = ElementType::Float32;
  std::vector<int64_t> shape;  // tensor records
};

using CheckpointRecords = std::map<std::string, CheckpointRecord>;

// A record's size in the body: kind, name length, name, value. The
// smallest is 12 bytes: a one-byte name and an 8-byte value (an integer, a
// real, an empty text's length; a tensor takes more).
uint64_t record_bytes(const std::string& name, const CheckpointRecord& r);

// The whole file as bytes (header, body, checksum).
std::string serialize_checkpoint(const CheckpointRecords& records);
// Throws CheckpointError naming the first problem found.
CheckpointRecords parse_checkpoint(const std::string& bytes);

// FNV-1a (64 bit) of a byte range: the format's checksum.
uint64_t fnv1a64(const void* data, size_t size, uint64_t h = 1469598103934665603ull);

}  // namespace atl
