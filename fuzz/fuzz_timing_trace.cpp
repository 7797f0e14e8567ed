// libFuzzer target: the timing trace reader TimingTrace::decode()
// (src/comm/timing_trace.cpp), which `atoll retime` and resuming from a
// checkpoint run on files a run wrote (timing/worker-<rank>.trace).
//
// The seeds (fuzz/corpus/fuzz_timing_trace) are whole trace files written by
// tiny runs of several methods. For an input that decodes:
//   - every record is read with for_each(), which must not throw (decode
//     checked them all), and steps() equals the step records counted;
//   - encode() and decode() again give the same bytes and the same records;
//   - the records, recorded again with step(), compute(), call() and wait(),
//     read back the same, and recording them with a checkpoint between two
//     steps (what visit_state saves: decode(encode()), then going on) gives
//     the bytes of recording them without one. The step to stop at comes
//     from a hash of the input, so mutations move it.
// A few bytes can declare a trace of 2^40 steps (a block's repeat count), so
// the records are read up to a budget; past it steps() is not called (it
// would walk them all) and the records are compared only up to the budget.
//
// Expected: TraceError. Findings: crashes, sanitizer reports, any other
// exception, a broken round trip, timeouts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm/timing_trace.h"

namespace {

// Records read per trace. A record takes at least a byte, so an input within
// scripts/fuzz's -max_len (4096) is read whole unless repeat counts expand
// it; a larger budget only slows the fuzzer (20,000: 3.7x fewer exec/s).
constexpr size_t kBudget = 4096;

// Thrown from a for_each callback to stop at the budget.
struct BudgetReached {};

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_timing_trace: %s\n", what.c_str());
  std::abort();
}

// The first kBudget records; `complete` says whether that was all of them.
std::vector<atl::TraceRecord> records_of(const atl::TimingTrace& t, bool* complete) {
  std::vector<atl::TraceRecord> out;
  *complete = true;
  try {
    t.for_each([&](const atl::TraceRecord& r) {
      if (out.size() == kBudget) throw BudgetReached{};
      out.push_back(r);
    });
  } catch (const BudgetReached&) {
    *complete = false;
  } catch (const atl::TraceError& e) {
    finding(std::string("for_each() threw on a trace that decoded: ") + e.what());
  }
  return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same(const atl::TraceRecord& a, const atl::TraceRecord& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case atl::TraceRecord::Kind::Step:
      return true;
    case atl::TraceRecord::Kind::Compute:
      return same_bits(a.seconds, b.seconds);
    case atl::TraceRecord::Kind::Wait:
      return a.waits_back == b.waits_back;
    case atl::TraceRecord::Kind::Call:
      return a.call.op == b.call.op && a.call.channel == b.call.channel && same_bits(a.call.bytes, b.call.bytes) &&
             a.call.rank == b.call.rank && a.call.list == b.call.list && a.call.tag == b.call.tag;
  }
  return false;
}

// Records records[from, to) into `t` through the recording calls, as a run
// would; `issued` counts the async calls so far. False if a wait names an
// async call not yet made: recording cannot express that (wait() ignores it).
bool record(const std::vector<atl::TraceRecord>& records, size_t from, size_t to, atl::TimingTrace& t,
            int64_t& issued) {
  for (size_t i = from; i < to; ++i) {
    const atl::TraceRecord& r = records[i];
    switch (r.kind) {
      case atl::TraceRecord::Kind::Step:
        t.step();
        break;
      case atl::TraceRecord::Kind::Compute:
        t.compute(r.seconds);
        break;
      case atl::TraceRecord::Kind::Call: {
        const int64_t id = t.call(r.call);
        const int64_t expected = atl::is_async(r.call.op) ? issued++ : -1;
        // After a restore this checks that decode() counted the async calls.
        if (id != expected)
          finding("call() returned async id " + std::to_string(id) + ", not " + std::to_string(expected));
        break;
      }
      case atl::TraceRecord::Kind::Wait:
        if (r.waits_back >= issued) return false;
        t.wait(issued - 1 - r.waits_back);
        break;
    }
  }
  return true;
}

void check_records(const atl::TimingTrace& t, const std::vector<atl::TraceRecord>& expected, const char* what) {
  bool complete = false;
  const std::vector<atl::TraceRecord> got = records_of(t, &complete);
  if (!complete || got.size() != expected.size()) finding(std::string(what) + ": another number of records");
  for (size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], expected[i])) finding(std::string(what) + ": record " + std::to_string(i) + " differs");
}

// The recording properties for the records of a decoded input.
void check_recording(const std::vector<atl::TraceRecord>& records, int64_t rank, const std::string& input) {
  atl::TimingTrace whole;
  int64_t issued = 0;
  if (!record(records, 0, records.size(), whole, issued)) return;
  check_records(whole, records, "recorded again");
  const std::string expected = whole.encode(rank);
  check_records(atl::TimingTrace::decode(expected, "recorded again"), records, "recorded again and decoded");

  // Stop before a step record (checkpoints are taken between steps), or at the end.
  std::vector<size_t> step_starts;
  for (size_t i = 0; i < records.size(); ++i)
    if (records[i].kind == atl::TraceRecord::Kind::Step) step_starts.push_back(i);
  step_starts.push_back(records.size());
  const size_t stop = step_starts[std::hash<std::string>{}(input) % step_starts.size()];
  atl::TimingTrace first;
  issued = 0;
  record(records, 0, stop, first, issued);
  atl::TimingTrace resumed;
  try {
    resumed = atl::TimingTrace::decode(first.encode(0), "checkpoint");
  } catch (const atl::TraceError& e) {
    finding(std::string("a trace saved mid-run does not decode: ") + e.what());
  }
  record(records, stop, records.size(), resumed, issued);
  if (resumed.encode(rank) != expected)
    finding("a trace saved before record " + std::to_string(stop) + " and continued encodes differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  atl::TimingTrace trace;
  int64_t rank = -1;
  try {
    trace = atl::TimingTrace::decode(bytes, "input", &rank);
  } catch (const atl::TraceError&) {
    return 0;
  }

  bool complete = false;
  const std::vector<atl::TraceRecord> records = records_of(trace, &complete);
  if (complete) {
    int64_t steps = 0;
    for (const auto& r : records) steps += r.kind == atl::TraceRecord::Kind::Step;
    if (trace.steps() != steps) finding("steps() differs from the step records for_each() gives");
  }

  const std::string encoded = trace.encode(rank);
  atl::TimingTrace again;
  int64_t rank_again = -1;
  try {
    again = atl::TimingTrace::decode(encoded, "encode()'s output", &rank_again);
  } catch (const atl::TraceError& e) {
    finding(std::string("a decoded trace's encode() does not decode: ") + e.what());
  }
  if (rank_again != rank) finding("the rank changed in decode(encode())");
  if (again.encode(rank) != encoded) finding("decode(encode(t)).encode() != encode(t)");
  if (again.stored_bytes() != trace.stored_bytes()) finding("stored_bytes() changed in decode(encode())");

  bool complete_again = false;
  const std::vector<atl::TraceRecord> records_again = records_of(again, &complete_again);
  if (complete_again != complete || records_again.size() != records.size())
    finding("decode(encode(t)) has another number of records");
  for (size_t i = 0; i < records.size(); ++i)
    if (!same(records[i], records_again[i])) finding("record " + std::to_string(i) + " changed in decode(encode())");

  if (complete) check_recording(records, rank, bytes);
  return 0;
}
