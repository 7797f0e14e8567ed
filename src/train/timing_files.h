// A run folder's timing traces: timing/worker-<rank>.trace, one per worker,
// written when the run finishes (each process writes its own workers').
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "comm/timing_trace.h"

namespace atl {

std::filesystem::path timing_trace_path(const std::filesystem::path& run_dir, int64_t rank);
void write_timing_trace(const std::filesystem::path& run_dir, int64_t rank, const TimingTrace& trace);
// Every worker's trace; throws TraceError naming the file and what is wrong
// (missing, malformed, or another worker's).
std::vector<TimingTrace> read_timing_traces(const std::filesystem::path& run_dir, int64_t workers);

}  // namespace atl
