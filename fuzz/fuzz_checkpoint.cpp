// libFuzzer target: the checkpoint file reader parse_checkpoint()
// (src/train/checkpoint_file.cpp, torch-free).
//
// Each input is parsed as a whole file (magic, version, body size, body,
// checksum); if it starts with the magic, it is parsed a second time with
// its body size and checksum fields set to match the bytes between them,
// so that mutations reach the record parser instead of stopping at the
// checksum check. The seeds (fuzz/corpus/fuzz_checkpoint) are whole files.
// A file that parses must serialize and parse back to the same records.
//
// Expected: CheckpointError. Findings: crashes, sanitizer reports, any other
// exception (std::length_error, std::bad_alloc...), a broken round trip,
// timeouts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "train/checkpoint_file.h"

namespace {

bool same(const atl::CheckpointRecords& a, const atl::CheckpointRecords& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    const auto &x = ia->second, &y = ib->second;
    if (ia->first != ib->first || x.kind != y.kind) return false;
    switch (x.kind) {
      case atl::RecordKind::Integer:
        if (x.integer != y.integer) return false;
        break;
      case atl::RecordKind::Real:
        if (std::memcmp(&x.real, &y.real, sizeof x.real) != 0) return false;  // NaN payloads too
        break;
      case atl::RecordKind::Text:
        if (x.text != y.text) return false;
        break;
      case atl::RecordKind::Tensor:
        if (x.element != y.element || x.shape != y.shape || x.text != y.text) return false;
        break;
    }
  }
  return true;
}

void parse(const std::string& file) {
  atl::CheckpointRecords records;
  try {
    records = atl::parse_checkpoint(file);
  } catch (const atl::CheckpointError&) {
    return;
  }
  const std::string again = atl::serialize_checkpoint(records);
  atl::CheckpointRecords back;
  try {
    back = atl::parse_checkpoint(again);
  } catch (const atl::CheckpointError& e) {
    std::fprintf(stderr, "a parsed checkpoint does not parse after serialize_checkpoint(): %s\n", e.what());
    std::abort();
  }
  if (!same(records, back)) {
    std::fprintf(stderr, "parse_checkpoint(serialize_checkpoint(records)) != records\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  parse(bytes);
  // "ATOLLCKP" u32 version u64 body_size | body | u64 checksum
  constexpr size_t kHeader = 8 + 4 + 8, kTrailer = 8;
  if (size >= kHeader + kTrailer && std::memcmp(data, "ATOLLCKP", 8) == 0) {
    std::string fixed = bytes;
    const uint64_t body_size = size - kHeader - kTrailer;
    std::memcpy(&fixed[12], &body_size, sizeof body_size);
    const uint64_t sum = atl::fnv1a64(fixed.data() + kHeader, body_size);
    std::memcpy(&fixed[size - kTrailer], &sum, sizeof sum);
    if (fixed != bytes) parse(fixed);
  }
  return 0;
}
