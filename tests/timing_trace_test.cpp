// Timing traces (src/comm/timing_trace.{h,cpp}): the encoding round-trips,
// repeated steps fold, a trace saved in a checkpoint goes on as if never
// stopped, every malformed file is refused with a message naming the
// problem, and a resumed run's traces (and what atoll retime makes of them)
// equal the uninterrupted run's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/retime.h"
#include "atoll/train.h"
#include "comm/timing_trace.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/checkpoint.h"
#include "train/timing_files.h"
#include "util/file_io.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

std::vector<TraceRecord> records_of(const TimingTrace& t) {
  std::vector<TraceRecord> out;
  t.for_each([&](const TraceRecord& r) { out.push_back(r); });
  return out;
}

// Field by field, so a failure names the record and the field.
void expect_same_records(const std::vector<TraceRecord>& a, const std::vector<TraceRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].seconds, b[i].seconds);
    EXPECT_EQ(a[i].waits_back, b[i].waits_back);
    EXPECT_EQ(a[i].call.op, b[i].call.op);
    EXPECT_EQ(int(a[i].call.channel), int(b[i].call.channel));
    EXPECT_EQ(a[i].call.bytes, b[i].call.bytes);
    EXPECT_EQ(a[i].call.rank, b[i].call.rank);
    EXPECT_EQ(a[i].call.list, b[i].call.list);
    EXPECT_EQ(a[i].call.tag, b[i].call.tag);
  }
}

// Records into a trace and, beside it, the records for_each must give back.
struct Recorder {
  TimingTrace trace;
  std::vector<TraceRecord> expected;

  void step() {
    trace.step();
    expected.emplace_back();
  }
  void compute(double s) {
    trace.compute(s);
    TraceRecord r;
    r.kind = TraceRecord::Kind::Compute;
    r.seconds = s;
    expected.push_back(r);
  }
  int64_t call(const TracedCall& c) {
    TraceRecord r;
    r.kind = TraceRecord::Kind::Call;
    r.call = c;
    expected.push_back(r);
    return trace.call(c);
  }
  // `waits_back`: what the record must say (0 = the latest async call).
  void wait(int64_t async_id, int64_t waits_back) {
    trace.wait(async_id);
    TraceRecord r;
    r.kind = TraceRecord::Kind::Wait;
    r.waits_back = waits_back;
    expected.push_back(r);
  }
};

TEST(TimingTrace, EveryRecordKindAndOpRoundTripsThroughEncodeAndDecode) {
  Recorder rec;
  // Before the first step: a start-up broadcast (a block without 'S').
  EXPECT_EQ(rec.call({TracedOp::Broadcast, 0, 4096, 0, {}, "init"}), -1);
  rec.step();
  rec.compute(0.125);
  EXPECT_EQ(rec.call({TracedOp::AllReduce, 0, 1000.5, 0, {}, "grad"}), -1);
  EXPECT_EQ(rec.call({TracedOp::AllReduceOverlapped, 0, 8e6, 0, {131072, 524288, 1048576}, "grad"}), -1);
  const int64_t a0 = rec.call({TracedOp::AllReduceAsync, 0, 2e5, 0, {}, "fragment/0"});
  EXPECT_EQ(a0, 0);
  rec.call({TracedOp::AllGather, 0, 512, 0, {}, "demo"});
  rec.step();
  rec.compute(0);
  const int64_t a1 = rec.call({TracedOp::ExchangeWithAsync, 0, 300, 0, {1, 3, 1000000}, "gossip"});
  EXPECT_EQ(a1, 1);
  rec.wait(a0, 1);  // the call before the latest
  rec.call({TracedOp::Barrier, 0, 0, 0, {}, "barrier"});
  rec.call({TracedOp::Exchange, 0, 64, 5, {}, "pair"});
  rec.call({TracedOp::ExchangeWith, 1, 77.25, 0, {0}, ""});  // the island's group, an empty tag
  rec.call({TracedOp::Send, 0, 1e9, 4095, {}, "to-leader"});
  rec.call({TracedOp::Recv, 1, 3, 2, {}, std::string(256, 't')});  // the longest tag allowed
  rec.wait(a1, 0);
  rec.trace.wait(-1);  // a synchronous call's Work: nothing to record
  rec.step();
  rec.compute(std::numeric_limits<double>::denorm_min());

  expect_same_records(records_of(rec.trace), rec.expected);
  EXPECT_EQ(rec.trace.steps(), 3);

  const std::string bytes = rec.trace.encode(7);
  EXPECT_EQ(rec.trace.stored_bytes(), bytes.size());
  int64_t rank = -1;
  const TimingTrace back = TimingTrace::decode(bytes, "round trip", &rank);
  EXPECT_EQ(rank, 7);
  expect_same_records(records_of(back), rec.expected);
  EXPECT_EQ(back.steps(), 3);
  EXPECT_EQ(back.encode(7), bytes);
}

// The encoded block count: the little-endian u64 after the magic and the rank.
uint64_t block_count(const std::string& encoded) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<uint8_t>(encoded.at(16 + size_t(i)))) << (8 * i);
  return n;
}

// One DDP-like step: compute, then the gradient all-reduce.
void ddp_step(TimingTrace& t, double compute = 0.01) {
  t.step();
  t.compute(compute);
  t.call({TracedOp::AllReduce, 0, 4e6, 0, {}, "grad"});
}

TEST(TimingTrace, ThousandIdenticalStepsFoldIntoOneBlockOfAFewBytes) {
  TimingTrace t;
  for (int i = 0; i < 1000; ++i) ddp_step(t);
  const std::string bytes = t.encode(0);
  EXPECT_LT(bytes.size(), 200u);
  EXPECT_EQ(block_count(bytes), 1u);
  EXPECT_EQ(t.steps(), 1000);
  EXPECT_EQ(TimingTrace::decode(bytes, "folded").steps(), 1000);
}

TEST(TimingTrace, AStepThatDiffersBreaksTheRunAndTheStepsAfterItFoldAgain) {
  TimingTrace uniform, broken;
  for (int i = 0; i < 1000; ++i) {
    ddp_step(uniform);
    ddp_step(broken, i == 500 ? 0.02 : 0.01);
  }
  const std::string bytes = broken.encode(0);
  EXPECT_EQ(block_count(bytes), 3u);  // 500 x A, B, 499 x A
  EXPECT_GT(bytes.size(), uniform.encode(0).size());
  EXPECT_LT(bytes.size(), 200u);
  std::vector<double> computes;
  TimingTrace::decode(bytes, "broken").for_each([&](const TraceRecord& r) {
    if (r.kind == TraceRecord::Kind::Compute) computes.push_back(r.seconds);
  });
  ASSERT_EQ(computes.size(), 1000u);
  for (size_t i = 0; i < computes.size(); ++i) EXPECT_EQ(computes[i], i == 500 ? 0.02 : 0.01) << "step " << i;
}

// Step i of a trace with folds, breaks and an async call waited on one step
// later (so one is in flight at every save point).
void mixed_step(TimingTrace& t, int i, int64_t* in_flight) {
  t.step();
  t.compute(i % 7 == 3 ? 0.02 : 0.01);
  if (*in_flight >= 0) t.wait(*in_flight);
  t.call({TracedOp::AllReduce, 0, 4e6, 0, {}, "grad"});
  *in_flight = i % 50 >= 40 ? t.call({TracedOp::AllReduceAsync, 0, 1e5, 0, {}, "fragment/0"}) : -1;
}

TEST(TimingTrace, ATraceSavedMidRunAndContinuedEncodesAsTheUninterruptedOne) {
  constexpr int kSteps = 120;
  TimingTrace whole;
  int64_t in_flight = -1;
  for (int i = 0; i < kSteps; ++i) mixed_step(whole, i, &in_flight);
  const std::string expected = whole.encode(3);

  // Save points: before any step, inside a fold, right after a break, with
  // an async call in flight, and at the end.
  for (int save_at : {0, 1, 2, 3, 4, 5, 40, 41, 45, 99, kSteps}) {
    SCOPED_TRACE("saved after step " + std::to_string(save_at));
    TimingTrace first;
    int64_t pending = -1;
    for (int i = 0; i < save_at; ++i) mixed_step(first, i, &pending);
    StateWriter writer;
    first.visit_state(writer);

    TimingTrace resumed;
    resumed.compute(9.0);  // what the trace held before loading is replaced
    StateReader reader(writer.records(), "test checkpoint");
    resumed.visit_state(reader);
    reader.expect_all_read();
    for (int i = save_at; i < kSteps; ++i) mixed_step(resumed, i, &pending);
    EXPECT_EQ(resumed.encode(3), expected);
  }
}

// --- malformed files ------------------------------------------------------

// The format written out by hand (timing_trace.h), so the cases below do not
// depend on the encoder they test.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}
std::string u64(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}
std::string f64(double v) {
  std::string out(8, '\0');
  std::memcpy(&out[0], &v, 8);
  return out;
}
std::string header(uint64_t blocks) { return "ATLTIME1" + u64(0) + u64(blocks); }
std::string block(const std::string& records, uint64_t repeats = 1) {
  return varint(repeats) + varint(records.size()) + records;
}
std::string compute(double s) { return "C" + f64(s); }
// 'O' op channel bytes rank list tag, with the lengths given separately so
// a case can lie about them.
std::string call(uint8_t op, uint8_t channel = 0, double bytes = 8, const std::string& list = varint(0),
                 const std::string& tag = varint(4) + "grad") {
  return std::string("O") + char(op) + char(channel) + f64(bytes) + varint(0) + list + tag;
}
std::string file(const std::string& records) { return header(1) + block(records); }

struct BadFile {
  const char* name;
  std::string bytes;
  const char* message;  // a distinctive part of the TraceError's message
};

// One test over the table, not one per case: each gtest case is a process of
// its own in ctest, about a second of start-up each.
const std::vector<BadFile>& bad_files() {
  const std::string step = "S" + compute(0.5);
  static const std::vector<BadFile> cases = {
      {"wrong magic", "ATLTIME2" + u64(0) + u64(0), "does not start with ATLTIME1"},
      {"empty file", "", "truncated: the magic is cut off"},
      {"truncated header", "ATLTIME1" + u64(0) + "\x01\x00", "truncated: the block count is cut off"},
      {"implausible rank", "ATLTIME1" + u64(uint64_t(1) << 40) + u64(0), "rank 1099511627776 is implausible"},
      {"truncated block", file(step).substr(0, header(1).size() + 2 + 4), "truncated: a block is cut off"},
      {"truncated record", header(1) + block("SC\x01\x02"), "truncated: a compute time is cut off"},
      {"more blocks than the file holds", header(1000) + block(step), "block count 1000 is more than the 12 bytes"},
      // Fewer than the file's size, but 3 bytes each (a repeat count, a length, a record) are more.
      {"more blocks than the bytes left can hold", header(5) + block(step), "block count 5 is more than the 12 bytes"},
      {"a block missing", header(2) + block(step), "truncated: a block's repeat count is cut off"},
      {"zero repeats", header(1) + block(step, 0), "repeat count 0 is out of range"},
      // (with bytes after it, or the block count is refused first: a block takes at least 3)
      {"empty block", header(1) + block("") + "zz", "an empty block"},
      {"unknown record kind", file("SX"), "unknown record kind 88"},
      {"unknown op", file("S" + call(12)), "unknown call op 12"},
      {"op 0", file("S" + call(0)), "unknown call op 0"},
      {"channel 2", file("S" + call(1, 2)), "call channel 2 (0 or 1 allowed)"},
      {"negative compute", file("S" + compute(-1)), "compute time is negative or not finite"},
      {"NaN compute", file("S" + compute(std::nan(""))), "compute time is negative or not finite"},
      {"infinite compute", file("S" + compute(HUGE_VAL)), "compute time is negative or not finite"},
      {"negative bytes", file("S" + call(1, 0, -8)), "byte count is negative or not finite"},
      {"a step record inside a block", file(step + "S"), "a step record inside a block"},
      {"trailing bytes", file(step) + "z", "unexpected bytes after the last block"},
      {"implausible list length", file("S" + call(8, 0, 8, varint(uint64_t(1) << 30))),
       "list of 1073741824 entries is implausible"},
      {"list longer than the bytes left", file("S" + call(8, 0, 8, varint(1000) + varint(1) + varint(2))),
       "list of 1000 entries is implausible"},
      {"implausible tag length", file("S" + call(1, 0, 8, varint(0), varint(100000))),
       "tag of 100000 bytes is implausible"},
      {"overlong varint", file("SW" + std::string(10, '\xff') + "\x01"), "a wait is not a valid varint"},
      {"a later block without a step", header(2) + block(step) + block(compute(0.5)),
       "block 1 does not begin with a step"},
      {"repeats beyond the limit in all", header(2) + block(step, uint64_t(1) << 40) + block(step, 2),
       "repeat more than"},
      {"implausible call rank", file("S" + std::string("O") + char(5) + char(0) + f64(8) + varint(uint64_t(1) << 33)),
       "a call's rank 8589934592 is implausible"},
      {"implausible list entry", file("S" + call(3, 0, 8, varint(1) + varint(uint64_t(1) << 50))),
       "a call's list entry"},
  };
  return cases;
}

TEST(TimingTrace, EveryMalformedFileIsRefusedWithAMessageNamingTheFileAndTheProblem) {
  // The well-formed file the cases are variations of reads back.
  ASSERT_EQ(TimingTrace::decode(file("S" + compute(0.5) + call(1)), "good.trace").steps(), 1);
  for (const BadFile& bad : bad_files()) {
    SCOPED_TRACE(bad.name);
    try {
      TimingTrace::decode(bad.bytes, "worker-0.trace");
      ADD_FAILURE() << "decoded";
    } catch (const TraceError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("worker-0.trace: ", 0), 0u) << what;
      EXPECT_NE(what.find(bad.message), std::string::npos) << what;
    }
  }
}

// --- the run folder's trace files -------------------------------------------

TEST(TimingFiles, AMissingTraceIsNamedWithWhatToDo) {
  testing::TempDir dir;
  write_timing_trace(dir.str(), 0, TimingTrace());
  try {
    read_timing_traces(dir.str(), 2);
    FAIL() << "read";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker-1.trace is missing"), std::string::npos) << what;
    EXPECT_NE(what.find("run it again to retime it"), std::string::npos) << what;
  }
}

TEST(TimingFiles, AnotherWorkersTraceIsRefusedNamingBothRanks) {
  testing::TempDir dir;
  TimingTrace t;
  ddp_step(t);
  write_timing_trace(dir.str(), 0, t);
  write_file_atomic(timing_trace_path(dir.str(), 1).string(), t.encode(0));  // worker 0's, filed as worker 1's
  try {
    read_timing_traces(dir.str(), 2);
    FAIL() << "read";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker-1.trace holds worker 0's trace, not worker 1's"), std::string::npos) << what;
  }
  // Each in its place reads back.
  write_timing_trace(dir.str(), 1, t);
  EXPECT_EQ(read_timing_traces(dir.str(), 2).size(), 2u);
}

// --- retime_run's refusals ----------------------------------------------------

TEST(RetimeRefusals, AKeyThatIsNotTheNetworkIsRefusedByName) {
  // retime_run checks the keys before it reads the run: a folder with a
  // summary.json is enough to reach the check.
  testing::TempDir dir;
  dir.write("summary.json", "{}\n");
  for (const std::string item :
       {"optim.lr=0.1", "network.compute_time=measured", "network.speed_factors=1,2", "--strategy.workers=8"}) {
    const std::string key = item.substr(item.find_first_not_of('-'), item.find('=') - item.find_first_not_of('-'));
    const std::string what = testing::invalid_argument_message([&] { retime_run(dir.str(), {item}); });
    EXPECT_NE(what.find("retime changes only the network, not '" + key + "'"), std::string::npos)
        << item << ": " << what;
  }
}

TEST(RetimeRefusals, AnUnfinishedRunFolderIsRefused) {
  testing::TempDir dir;
  dir.write("config.toml", "[train]\nsteps = 10\n");
  const std::string what = testing::invalid_argument_message([&] { retime_run(dir.str(), {"network.latency=1ms"}); });
  EXPECT_NE(what.find("is not a finished run (no summary.json)"), std::string::npos) << what;
}

// --- a stopped and resumed run ---------------------------------------------------

// The events without the fields measured on the machine's clock.
std::vector<nlohmann::json> without_wall_clock(const std::vector<std::string>& lines) {
  static const char* wall[] = {"elapsed_s",
                               "tokens_per_s",
                               "model_flops_per_s",
                               "correlation_ms",
                               "wall_s",
                               "eta_s",
                               "eval_s",
                               "final_eval_s",
                               "startup_s",
                               "comm_wall_s",
                               "compute_wall_s",
                               "comm_wall_s_per_worker",
                               "compute_wall_s_per_worker",
                               "threads_per_worker"};
  std::vector<nlohmann::json> out;
  for (const auto& line : lines) {
    nlohmann::json e = nlohmann::json::parse(line);
    for (const char* key : wall) e.erase(key);
    out.push_back(e);
  }
  return out;
}

TEST(TimingTraceResume, AResumedRunWritesTheUninterruptedRunsTracesAndRetimesTheSame) {
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.network.compute_time = "flops";
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "whole";
  ASSERT_EQ(train(cfg).stopped_at, -1);

  cfg.run.name = "resumed";
  cfg.run.stop_at = 7;  // mid-period for H = 5: an outer step comes after the stop
  cfg.run.checkpoint_every = 3;
  ASSERT_EQ(train(cfg).stopped_at, 7);
  EXPECT_FALSE(fs::exists(timing_trace_path(tmp.path("resumed"), 0)));  // written only when the run ends
  EXPECT_NE(testing::invalid_argument_message([&] { retime_run(tmp.path("resumed"), {}); }).find("no summary.json"),
            std::string::npos);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  ASSERT_EQ(train(cfg).stopped_at, -1);

  for (int64_t r = 0; r < 2; ++r) {
    const std::string whole = read_file_bytes(timing_trace_path(tmp.path("whole"), r).string());
    const std::string resumed = read_file_bytes(timing_trace_path(tmp.path("resumed"), r).string());
    EXPECT_EQ(resumed, whole) << "worker " << r;
    EXPECT_EQ(TimingTrace::decode(whole, "worker").steps(), cfg.train.steps);
  }

  const std::vector<std::string> network = {"network.bandwidth=5Mbit/s", "network.latency=30ms", "network.jitter=1ms"};
  const RetimedRun a = retime_run(tmp.path("whole"), network), b = retime_run(tmp.path("resumed"), network);
  const auto ea = without_wall_clock(a.events), eb = without_wall_clock(b.events);
  ASSERT_EQ(ea.size(), eb.size());
  for (size_t i = 0; i < ea.size(); ++i) EXPECT_EQ(ea[i], eb[i]) << "event " << i;
  EXPECT_GT(ea.back().at("sim_time_s").get<double>(), 0);
}

TEST(TimingTraceResume, ACheckpointWhoseTraceHoldsAnotherNumberOfStepsThanItsStepIsRefused) {
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.network.compute_time = "flops";
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "run";
  cfg.run.stop_at = 7;
  ASSERT_EQ(train(cfg).stopped_at, 7);
  // A few bytes of run-length that claim 2^40 steps; the record decodes.
  const CheckpointStore store(tmp.path("run"));
  CheckpointRecords records = store.read(7, "worker-1");
  records.at("timing_trace").text = header(1) + block("S" + compute(0.5), uint64_t(1) << 40);
  ASSERT_EQ(TimingTrace::decode(records.at("timing_trace").text, "edited").steps(), int64_t(1) << 40);
  store.write(7, "worker-1", records);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  try {
    train(cfg);
    ADD_FAILURE() << "resumed";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker-1.ckpt: its timing trace holds 1099511627776 steps, but the checkpoint is of step 7"),
              std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace atl
