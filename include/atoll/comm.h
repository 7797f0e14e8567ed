// Communicator: collectives as one rank sees them (c10d-like), plus the byte
// ledger that every backend fills the same way.
//
// Every rank makes the same calls in the same order with the same shapes.
// Public methods are non-virtual: they record the op in the ledger, then call
// the backend's protected do_*; if a VirtualClock and NetworkModel are
// attached, the op's simulated completion time (last arrival + network time)
// is charged to the clock: blocking ops wait for it at once, non-blocking ops
// when their Work is waited on (so compute in between hides communication).
//
// Thread-safety: a Communicator belongs to one rank (one thread); the
// InProcessGroup that made it is shared and internally synchronised.
#pragma once

#include <ATen/core/Tensor.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/net.h"
#include "atoll/state.h"

namespace atl {

class TimingTrace;  // comm/timing_trace.h
struct TracedCall;

enum class ReduceOp { Sum, Mean };

// Thrown in every rank blocked in (or entering) a collective after abort().
class CommAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One recorded op of one rank.
struct LedgerEntry {
  int64_t step = 0;  // training step set by the worker loop
  CommOp op = CommOp::AllReduce;
  std::string tag;           // purpose: "grad", "pseudo-grad", "params", "sparse", "fragment/3", ...
  double payload_bytes = 0;  // this rank's message size S
  double sent_bytes = 0;     // under the configured algorithm
  double received_bytes = 0;
  double network_seconds = 0;  // the network model's time for this op (0 without a model)
  // The shares of the message that are positions and scales (the payload
  // path's codec says, Ledger::describe_payload); the rest is values.
  double index_share = 0, scale_share = 0;
};

// Bytes of a message, or of a total, by what they carry.
struct BytesByPart {
  double values = 0;   // the values (or their codes)
  double indices = 0;  // kept positions (sparse codecs)
  double scales = 0;   // per-block or per-chunk scales
  double total() const { return values + indices + scales; }
};

// Per-rank record of communication. Totals are kept per tag and overall.
class Ledger {
 public:
  void record(const LedgerEntry& e);
  const std::vector<LedgerEntry>& entries() const { return entries_; }
  double total_sent() const { return sent_; }
  double total_received() const { return received_; }
  int64_t ops() const { return static_cast<int64_t>(entries_.size()); }
  // Sum of the network model's time over every op.
  double total_network_seconds() const { return network_seconds_; }
  // Sent and received bytes per tag.
  const std::map<std::string, double>& sent_by_tag() const { return sent_by_tag_; }
  const std::map<std::string, double>& received_by_tag() const { return received_by_tag_; }
  // The payload path (compress/payload.h) says what the messages of the
  // entries recorded since entry `first` hold: `message`'s bytes by part.
  void describe_payload(int64_t first, const BytesByPart& message);
  // Sent bytes by part: each entry's sent bytes split by its message's
  // shares (undescribed entries are all values).
  BytesByPart sent_by_part() const;
  // Per tag, the shares of its messages by part (summed over its entries,
  // weighted by their sent bytes): a retimed run splits its new totals by
  // them. Only tags with indices or scales.
  std::map<std::string, BytesByPart> part_shares_by_tag() const;
  // The most bytes this rank sent within any `window_steps` consecutive
  // training steps (>= 1): its peak bandwidth need, in bytes per window.
  double peak_sent(int64_t window_steps) const;
  // Sent bytes recorded since the previous call (for per-step metrics).
  double take_sent_since_mark();
  double take_received_since_mark();
  // Checkpoints: every entry (totals are re-summed in the same order, so
  // they come back bitwise equal) and the marks.
  void visit_state(StateVisitor& v);

 private:
  std::vector<LedgerEntry> entries_;
  std::map<std::string, double> sent_by_tag_, received_by_tag_;
  double sent_ = 0, received_ = 0, network_seconds_ = 0;
  double sent_mark_ = 0, received_mark_ = 0;
};

// Handle of a non-blocking op. The data are final once wait() returns; the
// simulated clock is charged only for what the compute since the op started
// did not hide. A real backend's op may still be in flight until wait():
// `complete` finishes it (blocking) and writes the result into place.
class Work {
 public:
  Work() = default;
  Work(class Communicator* comm, double completion_time, std::function<void()> complete)
      : comm_(comm), completion_(completion_time), complete_(std::move(complete)) {}
  void wait();
  bool pending() const { return comm_ != nullptr; }
  // Runs `fn` once the op's data are final: now if they already are (the
  // in-process group, a finished Work), else when the transfer completes
  // (wait(), or a checkpoint save). For work on the result that a receiver
  // does on arrival (PayloadCodec::requantize), so it never sees partial data.
  void then(std::function<void()> fn);
  // Checkpoints: finishes a real backend's transfer now (the data are then
  // final) and saves or restores what stays pending: the simulated
  // completion time the clock is charged at wait().
  void visit_state(StateVisitor& v, const std::string& name, class Communicator& comm);

 private:
  friend class Communicator;
  class Communicator* comm_ = nullptr;
  double completion_ = 0;
  std::function<void()> complete_;
  int64_t trace_id_ = -1;  // the async call's id in the worker's TimingTrace (-1: not traced)
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  int64_t rank() const { return rank_; }
  int64_t size() const { return size_; }

  // In place; Mean divides by size() after summing in rank order.
  // `wire_bytes` >= 0 overrides the payload size the ledger and the network
  // model charge: a compressed payload is encoded, decoded locally and then
  // reduced in full precision, but only its encoded size travels.
  void all_reduce(at::Tensor& t, ReduceOp op, const std::string& tag, double wire_bytes = -1);
  Work all_reduce_async(at::Tensor& t, ReduceOp op, const std::string& tag, double wire_bytes = -1);
  // `out` receives every rank's 1-D tensor in rank order; sizes may differ
  // between ranks (DeMo). Dtypes must match.
  void all_gather(const at::Tensor& in, std::vector<at::Tensor>& out, const std::string& tag);
  // In place: every rank ends with root's values.
  void broadcast(at::Tensor& t, int64_t root, const std::string& tag);
  void barrier();
  // Symmetric pairwise swap: both ranks call exchange with each other; `recv`
  // (same shape and dtype as `send`) receives the peer's `send`.
  void exchange(const at::Tensor& send, at::Tensor& recv, int64_t peer, const std::string& tag);
  // Neighbourhood exchange (gossip, ring, groups): sends `send` to every rank
  // in `peers` and receives each peer's `send` into recvs[i] (allocated here).
  // Every peer must list this rank in its own call; the same pair's calls are
  // matched in order, so no schedule can deadlock. `peers` may be empty (the
  // rank sits this round out but still counts an op, keeping op sequences
  // equal on all ranks). One ledger entry: |peers|*S sent and received; time
  // alpha + |peers|*S/beta on the slowest link involved (ALGORITHMS.md 7.2).
  // `wire_bytes` >= 0: encoded size of `send` (see all_reduce).
  void exchange_with(const at::Tensor& send, std::vector<at::Tensor>& recvs, const std::vector<int64_t>& peers,
                     const std::string& tag, double wire_bytes = -1);
  // DDP's gradient all-reduce in buckets overlapped with the backward pass
  // (ALGORITHMS.md 7.3, PyTorch DDP). The values are exactly all_reduce's (one
  // reduction of the whole of t); only the ledger and the clock see buckets.
  // `buckets`: element counts in the order the backward pass produces them,
  // summing to t.numel(). Each bucket is one ledger entry of its share of the
  // payload (`wire_bytes` >= 0: the encoded size of all of t, split in
  // proportion to the elements; the entries add up to it).
  //
  // Time: the step's compute T is what the clock was charged since set_step()
  // (the worker loop calls set_step as the step begins and charges the
  // forward and backward passes before the strategy runs). Forward is T/3,
  // backward 2T/3 and produces the gradients at a uniform rate, so with
  // c_j = (elements of buckets 1..j) / numel, bucket j is ready at
  //   r_j = e - (2T/3) * (1 - c_j)          (e = now = end of the compute)
  // and the link serves the buckets in order, each taking the all-reduce
  // formula for its bytes d_j (latency per bucket):
  //   start_j = max(r_j, end_{j-1}),  end_j = start_j + d_j,  end_0 = -inf.
  // The clock waits until end_m: blocked time end_m - e, the part of the
  // communication the backward pass did not hide. One bucket (or T = 0)
  // gives all_reduce's time exactly. Across ranks the op ends at the latest
  // rank's end_m: for a link serving jobs in order, the end is
  // max_j (release_j + sum_{i>=j} d_i), and with the release of bucket j the
  // latest rank's r_j that equals the max over ranks of each rank's own end.
  // (With outages each bucket starts when the links are up; across ranks of
  // different speeds that is then an approximation.)
  void all_reduce_overlapped(at::Tensor& t, ReduceOp op, const std::string& tag, const std::vector<int64_t>& buckets,
                             double wire_bytes = -1);
  // A replay's all_reduce_overlapped (train/replay.h): the same ledger and
  // clock for a payload of `wire_bytes` in `buckets` (element counts), while
  // only `standin`, of any size, is reduced. A replay moves sizes, not
  // values: reducing a stand-in of the model's size cost a report's network
  // grid most of its time.
  void replay_all_reduce_overlapped(at::Tensor& standin, const std::string& tag, const std::vector<int64_t>& buckets,
                                    double wire_bytes);
  // Non-blocking variant: data are final at once (in-process), the clock is
  // charged at wait() for what compute since the call did not hide.
  Work exchange_with_async(const at::Tensor& send, std::vector<at::Tensor>& recvs, const std::vector<int64_t>& peers,
                           const std::string& tag, double wire_bytes = -1);
  // One-sided point-to-point; recv blocks until the matching send.
  void send(const at::Tensor& t, int64_t dst, const std::string& tag);
  void recv(at::Tensor& t, int64_t src, const std::string& tag);

  Ledger& ledger() { return ledger_; }
  const Ledger& ledger() const { return ledger_; }
  // Step number stamped on ledger entries. Called as a step begins, before
  // its compute is charged: it also marks where the step's compute starts
  // on the attached clock (all_reduce_overlapped's T).
  void set_step(int64_t step) {
    step_ = step;
    step_compute_start_ = clock_ != nullptr ? clock_->compute_seconds() : 0.0;
  }
  // Attaches simulated time (both may be null: no clock charging).
  void attach_clock(VirtualClock* clock, const NetworkModel* net) {
    clock_ = clock;
    net_ = net;
  }
  // Islands: this communicator joins device `device` of every island (the
  // cross-island group; rank = island) and `island` is the device's own
  // island group. Each op is then charged as `islands`' exchange pattern
  // prescribes (IslandNetwork::charge): its wide-area bytes and time in this
  // ledger, its part inside the island in `island`'s ledger, its whole time
  // to the clock. All-reduces also move as the pattern does: flat, within
  // this group; leader, among the islands' device 0 and then broadcast in
  // the island; sharded, slice `device` of 1/D within this group and then an
  // all-gather in the island. Every device of an island holds the same
  // values, so all three give the same result bit for bit. Other ops move
  // within this group (each device with its counterparts).
  // Null `islands`: ops are charged on the flat network (attach_clock's).
  void attach_islands(const IslandNetwork* islands, int64_t device, Communicator* island) {
    islands_ = islands;
    island_device_ = device;
    island_ = island;
  }
  // Records every call (and every wait on a Work) into `trace` as channel
  // `channel` (0 the strategy's group, 1 the island's): what atoll retime
  // replays on another network. Null: nothing is recorded.
  void attach_trace(TimingTrace* trace, uint8_t channel) {
    trace_ = trace;
    trace_channel_ = channel;
  }
  CollectiveAlgo algorithm() const { return algo_; }
  VirtualClock* clock() { return clock_; }
  // Checkpoints: the ledger and the op counter that seeds network jitter.
  void visit_state(StateVisitor& v);

 protected:
  Communicator(int64_t rank, int64_t size, CollectiveAlgo algo) : rank_(rank), size_(size), algo_(algo) {}

  // Backends move the data and return the simulated completion time: the
  // latest `arrival` among participants plus `network_seconds` (backends
  // without shared simulated time may return arrival + network_seconds).
  virtual double do_all_reduce(at::Tensor& t, ReduceOp op, double arrival, double network_seconds) = 0;
  // Returns completion time; fills `out`.
  virtual double do_all_gather(const at::Tensor& in, std::vector<at::Tensor>& out, double arrival,
                               const std::function<double(const std::vector<int64_t>&)>& network_seconds_for_sizes) = 0;
  virtual double do_broadcast(at::Tensor& t, int64_t root, double arrival, double network_seconds) = 0;
  virtual double do_barrier(double arrival, double network_seconds) = 0;
  // Posts `send` to every peer, then receives from each into recvs[i]
  // (pre-allocated like `send`); returns the completion time.
  virtual double do_exchange(const at::Tensor& send, std::vector<at::Tensor>& recvs, const std::vector<int64_t>& peers,
                             double arrival, double network_seconds) = 0;
  virtual double do_send(const at::Tensor& t, int64_t dst, double arrival, double network_seconds) = 0;
  virtual double do_recv(at::Tensor& t, int64_t src, double arrival, double network_seconds) = 0;
  // Non-blocking starts: may leave the op in flight and return what
  // completes it (blocking; null when already complete). The defaults run
  // the blocking op now, which is exact for the in-process group.
  virtual std::function<void()> start_all_reduce(at::Tensor& t, ReduceOp op, double arrival, double network_seconds,
                                                 double& completion) {
    completion = do_all_reduce(t, op, arrival, network_seconds);
    return nullptr;
  }
  virtual std::function<void()> start_exchange(const at::Tensor& send, std::vector<at::Tensor>& recvs,
                                               const std::vector<int64_t>& peers, double arrival,
                                               double network_seconds, double& completion) {
    completion = do_exchange(send, recvs, peers, arrival, network_seconds);
    return nullptr;
  }

 private:
  friend class Work;
  double arrival_time() const;
  double record(CommOp op, const std::string& tag, double payload, bool is_root,
                const std::vector<int64_t>& participants);
  // Islands: records `charge`'s two parts and returns its whole time.
  double record_charge(const LedgerEntry& wide_area, const OpCharge& charge);
  // Islands: an all-reduce's data path under the exchange pattern (see
  // attach_islands); returns the completion time.
  double island_all_reduce(at::Tensor& work, ReduceOp op, double arrival, double network_seconds);
  bool moves_by_pattern() const {
    return islands_ != nullptr && island_ != nullptr && islands_->exchange() != IslandExchange::Flat;
  }
  void finish(double completion);  // blocking ops: clock waits
  // all_reduce_overlapped's schedule and reduction; `elements` = the
  // buckets' sum, the payload's element count.
  void overlapped(at::Tensor& t, ReduceOp op, const std::string& tag, const std::vector<int64_t>& buckets,
                  int64_t elements, double payload);
  // The trace (if attached): records a call; returns its async id or -1.
  int64_t trace_call(TracedCall call);
  Work traced(Work w, int64_t trace_id) {
    w.trace_id_ = trace_id;
    return w;
  }
  // Moves an op's start past any outage of a participant's link (all ranks
  // when `participants` is empty).
  double after_outages(double completion, double network_seconds, const std::vector<int64_t>& participants) const;
  double start_exchange_with(const at::Tensor& send, std::vector<at::Tensor>& recvs, const std::vector<int64_t>& peers,
                             const std::string& tag, double wire_bytes, std::function<void()>* in_flight,
                             int64_t* trace_id);

  int64_t rank_, size_;
  CollectiveAlgo algo_;
  Ledger ledger_;
  int64_t step_ = 0;
  double step_compute_start_ = 0;  // clock's compute_seconds() at set_step()
  uint64_t op_index_ = 0;          // same sequence on every rank: seeds network jitter
  VirtualClock* clock_ = nullptr;
  const NetworkModel* net_ = nullptr;
  const IslandNetwork* islands_ = nullptr;
  int64_t island_device_ = 0;
  Communicator* island_ = nullptr;
  TimingTrace* trace_ = nullptr;
  uint8_t trace_channel_ = 0;
};

// n communicators for n threads in one process. Reductions sum in rank order
// into one buffer, so results are bitwise reproducible whatever the thread
// timing. abort() wakes every waiter with CommAborted.
class InProcessGroup {
 public:
  explicit InProcessGroup(int64_t n, CollectiveAlgo algo = CollectiveAlgo::Ring);
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int64_t size() const;
  Communicator& rank(int64_t r);
  void abort(const std::string& why);
  bool aborted() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace atl
