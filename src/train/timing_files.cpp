#include "train/timing_files.h"

#include <string>

#include "util/file_io.h"

namespace atl {

std::filesystem::path timing_trace_path(const std::filesystem::path& run_dir, int64_t rank) {
  return run_dir / "timing" / ("worker-" + std::to_string(rank) + ".trace");
}

void write_timing_trace(const std::filesystem::path& run_dir, int64_t rank, const TimingTrace& trace) {
  write_file_atomic(timing_trace_path(run_dir, rank).string(), trace.encode(rank));
}

std::vector<TimingTrace> read_timing_traces(const std::filesystem::path& run_dir, int64_t workers) {
  std::vector<TimingTrace> traces;
  for (int64_t r = 0; r < workers; ++r) {
    const std::filesystem::path path = timing_trace_path(run_dir, r);
    if (!std::filesystem::exists(path))
      throw TraceError(path.string() +
                       " is missing: the run did not record its timing (it was written by an "
                       "atoll before retime existed, or did not finish); run it again to retime it");
    int64_t rank = -1;
    traces.push_back(TimingTrace::decode(read_file_bytes(path.string()), path.string(), &rank));
    if (rank != r)
      throw TraceError(path.string() + " holds worker " + std::to_string(rank) + "'s trace, not worker " +
                       std::to_string(r) + "'s");
  }
  return traces;
}

}  // namespace atl
