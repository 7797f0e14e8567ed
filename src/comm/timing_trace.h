// What one worker's virtual clock consumed: its compute charges and every
// communication call with the sizes the network model charges, in order.
//
// A run's trajectory does not depend on the network (every delay a method
// has is counted in steps), so replaying this record against another
// network model gives exactly the clock a fresh run on that network would
// have had (atoll retime, train/replay.cpp). The record is what the
// Communicator's public calls and the driver's compute charges were, not
// their timing: replay calls the same Communicator code again.
//
// Compact: records are grouped into steps, and a step whose bytes equal the
// previous step's is stored as a repeat count, so a DDP or DiLoCo run with a
// modelled clock costs a few bytes per distinct step, whatever its length.
//
// File format (little-endian; "ATLTIME" magic, version 1), docs/RETIME.md:
//   magic[8] "ATLTIME1", u64 rank, u64 block count, then per block:
//   varint repeats (>= 1), varint length, `length` bytes of records.
// Records: 'S' (a step begins), 'C' f64 (compute seconds), 'W' varint
// (waits for the async call issued that many async calls ago, 0 = the
// latest), 'O' u8 op, u8 channel, f64 bytes, varint rank, varint list
// length, varints (peers or bucket element counts), varint tag length, tag.
// Thread-safety: one trace belongs to one worker.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace atl {

class StateVisitor;

// The Communicator calls a trace records, with the arguments that set their cost.
enum class TracedOp : uint8_t {
  AllReduce = 1,
  AllReduceAsync,
  AllReduceOverlapped,
  AllGather,
  Broadcast,
  Barrier,
  Exchange,
  ExchangeWith,
  ExchangeWithAsync,
  Send,
  Recv,
};
constexpr uint8_t kLastTracedOp = static_cast<uint8_t>(TracedOp::Recv);
bool is_async(TracedOp op);

struct TracedCall {
  TracedOp op = TracedOp::AllReduce;
  uint8_t channel = 0;        // 0: the strategy's communicator; 1: the island's own group
  double bytes = 0;           // the payload the ledger charges (exchange_with: per peer)
  int64_t rank = 0;           // broadcast root, exchange peer, send dst, recv src
  std::vector<int64_t> list;  // exchange_with's peers; all_reduce_overlapped's bucket elements
  std::string tag;            // the ledger's tag ("grad", "pseudo-grad", ...)
};

struct TraceRecord {
  enum class Kind : uint8_t { Step = 'S', Compute = 'C', Call = 'O', Wait = 'W' };
  Kind kind = Kind::Step;
  double seconds = 0;      // Compute
  TracedCall call;         // Call
  int64_t waits_back = 0;  // Wait: 0 = the latest async call, 1 = the one before, ...
};

// A malformed or truncated trace file.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TimingTrace {
 public:
  // Recording (the driver and the Communicator).
  void step();
  void compute(double seconds);
  // Returns the call's async id (counting async calls from 0), or -1.
  int64_t call(const TracedCall& c);
  void wait(int64_t async_id);

  // Reading: every record in order (repeats expanded lazily).
  void for_each(const std::function<void(const TraceRecord&)>& fn) const;
  int64_t steps() const;        // 'S' records
  size_t stored_bytes() const;  // the encoded size

  std::string encode(int64_t rank) const;
  // Throws TraceError naming `where` and what is wrong.
  static TimingTrace decode(const std::string& bytes, const std::string& where, int64_t* rank = nullptr);
  // Checkpoints: the trace so far (a resumed run's trace goes on from it).
  void visit_state(StateVisitor& v);

 private:
  struct Block {
    std::string bytes;
    int64_t repeats = 1;
  };
  void close_block();
  std::vector<Block> blocks_;
  std::string current_;
  int64_t async_issued_ = 0;
};

}  // namespace atl
