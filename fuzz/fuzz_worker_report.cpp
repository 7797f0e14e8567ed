// libFuzzer target: parse_worker_report() (src/train/worker_report.cpp), which
// rank 0 of a real run applies to the report every other rank sends at each
// observation (losses, clocks, bytes, fault events bound for metrics.jsonl).
//
// For an input that parses: its to_json() text parses again to the same
// report (same to_json()), every event is a one-line JSON object, and the
// counts are non-negative.
//
// Expected: std::invalid_argument naming the rank. Findings: crashes,
// sanitizer reports (deep nesting, huge numbers cast to integers), any other
// exception, a broken round trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "train/worker_report.h"

namespace {

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_worker_report: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  atl::WorkerReport r;
  try {
    r = atl::parse_worker_report(text, "rank 1");
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).find("rank 1 sent a report") == std::string::npos) fail("an error that names no rank");
    return 0;
  }
  if (r.loss_count < 0 || r.ops < 0) fail("a negative count was accepted");
  for (const auto& e : r.events)
    if (e.find('\n') != std::string::npos || e.empty() || e[0] != '{') fail("an event that is not a one-line object");
  const std::string once = r.to_json().dump();
  if (atl::parse_worker_report(once, "rank 1").to_json().dump() != once) fail("round trip differs");
  return 0;
}
