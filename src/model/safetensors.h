// The safetensors format (Hugging Face): named tensors in one file that
// PyTorch, JAX and Rust tools read without running any code from it.
//
// Layout: an 8-byte little-endian u64 N; N bytes of UTF-8 JSON, an object
// mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// plus an optional "__metadata__" object of strings; then the data buffer,
// each tensor's bytes at [begin, end) of it (offsets count from the buffer's
// start), row-major, little-endian.
//
// dtypes: BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64 (the ones LibTorch 1.13
// has). U16, U32, U64 and the 8-bit and smaller floats are valid safetensors
// but refused here, naming the dtype.
//
// The reader is for files users hand us, so it checks everything the format
// promises (see parse_safetensors) and reports the first problem it finds as
// a SafetensorsError; it never trusts a size before checking it against the
// bytes it has.
//
// Thread-safety: functions only; two writers of the same path race (the
// temporary file's name is fixed).
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace atl {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NamedTensor {
  std::string name;
  at::Tensor tensor;
};

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in the order of their data offsets in the file
  std::map<std::string, std::string> metadata;
};

// The whole file as bytes: the tensors' bytes in the given order, contiguous
// from offset 0 with no gaps, the header padded with spaces so the buffer
// starts 8-byte aligned (as the reference writer does), "__metadata__" first
// when there is any. Tensors may be non-contiguous or on another device (they
// are copied). Throws SafetensorsError naming the tensor for a repeated name,
// the reserved name "__metadata__", a name or metadata string that is not
// UTF-8, an undefined or non-strided tensor, or a dtype this format cannot
// hold here.
std::string encode_safetensors(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// encode_safetensors, written atomically (temporary file in the same folder,
// fsync, rename, fsync of the folder): a failure or a crash leaves the old
// file (or none), never a half-written one. Creates the parent folder.
// Throws SafetensorsError whose message starts with `path`.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Decodes a whole file. Every message starts with `source` (a path or a
// description) and names the tensor and the problem. Checked: the header
// size (>= 2, <= 100 MB, within the file); the header is one JSON object
// starting with '{' (trailing spaces allowed), nested no deeper than the
// format needs, with no repeated key in any object; each entry has exactly
// "dtype" (a known string), "shape" (non-negative integers) and
// "data_offsets" (two integers, begin <= end <= buffer size); its byte count
// equals elements x item size (computed without overflow); BOOL bytes are 0
// or 1; the tensors' byte ranges neither overlap nor leave a hole, and end at
// the end of the file; "__metadata__" is an object of strings. Returns owned
// CPU tensors of the file's dtype.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& source);

// read_file_bytes + parse_safetensors with the path as the source.
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace atl
