// Communicator front end: validation, the byte ledger and simulated time,
// shared by every backend (see atoll/comm.h).
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "comm/timing_trace.h"

#include <ATen/ops/empty_like.h>

namespace atl {
namespace {

double payload_bytes(const at::Tensor& t) {
  return static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
}

void require_defined(const at::Tensor& t, const char* op, const char* arg) {
  if (!t.defined()) {
    throw std::invalid_argument(std::string(op) + ": `" + arg + "` is an undefined tensor; pass an allocated tensor");
  }
}

// A peer/root/src/dst must name a rank of the group; `allow_self` only for roots.
void check_rank_arg(int64_t value, int64_t self, int64_t size, const char* op, const char* role, bool allow_self) {
  if (value < 0 || value >= size) {
    std::ostringstream msg;
    msg << op << ": " << role << " " << value << " is out of range for a group of " << size << " rank"
        << (size == 1 ? "" : "s") << " (valid: 0.." << size - 1 << ")";
    throw std::invalid_argument(msg.str());
  }
  if (!allow_self && value == self) {
    std::ostringstream msg;
    msg << op << ": " << role << " " << value << " is this rank itself; point-to-point ops need two different ranks";
    throw std::invalid_argument(msg.str());
  }
}

// Backends work on contiguous buffers; a non-contiguous output is copied back.
at::Tensor contiguous_work(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }
void copy_back(at::Tensor& t, const at::Tensor& work) {
  if (!work.is_same(t)) t.copy_(work);
}

}  // namespace

void Work::wait() {
  if (comm_ == nullptr) return;
  Communicator* comm = comm_;
  comm_ = nullptr;
  if (comm->trace_ != nullptr) comm->trace_->wait(trace_id_);
  if (complete_) {
    auto complete = std::move(complete_);
    complete_ = nullptr;
    complete();
  }
  comm->finish(completion_);
}

void Work::then(std::function<void()> fn) {
  if (!fn) return;
  if (!complete_) {  // the data are already final
    fn();
    return;
  }
  complete_ = [first = std::move(complete_), next = std::move(fn)]() {
    first();
    next();
  };
}

void Work::visit_state(StateVisitor& v, const std::string& name, Communicator& comm) {
  StateVisitor::Scope scope(v, name);
  bool pending = comm_ != nullptr;
  if (!v.loading() && complete_) {
    auto complete = std::move(complete_);
    complete_ = nullptr;
    complete();
  }
  v.flag("pending", pending);
  v.real("completion", completion_);
  v.integer("trace_id", trace_id_);
  if (v.loading()) {
    comm_ = pending ? &comm : nullptr;
    complete_ = nullptr;
  }
}

void Communicator::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "comm");
  int64_t ops = static_cast<int64_t>(op_index_);
  v.integer("op_index", ops);
  op_index_ = static_cast<uint64_t>(ops);
  StateVisitor::Scope ledger(v, "ledger");
  ledger_.visit_state(v);
}

int64_t Communicator::trace_call(TracedCall call) {
  if (trace_ == nullptr) return -1;
  call.channel = trace_channel_;
  return trace_->call(call);
}

double Communicator::arrival_time() const { return clock_ != nullptr ? clock_->now() : 0.0; }

double Communicator::record(CommOp op, const std::string& tag, double payload, bool is_root,
                            const std::vector<int64_t>& participants) {
  const uint64_t index = op_index_++;
  LedgerEntry e;
  e.step = step_;
  e.op = op;
  e.tag = tag;
  e.payload_bytes = payload;
  if (islands_ != nullptr) {
    return record_charge(e, islands_->charge(op, payload, payload, 0.0, island_device_, is_root, participants, index));
  }
  const ByteCount bytes = bytes_for(op, algo_, payload, size_, is_root);
  e.sent_bytes = bytes.sent;
  e.received_bytes = bytes.received;
  if (net_ != nullptr) {
    e.network_seconds = participants.empty() ? net_->collective_seconds(op, payload, index)
                                             : net_->op_seconds(op, payload, participants, index);
  }
  ledger_.record(e);
  return e.network_seconds;
}

double Communicator::record_charge(const LedgerEntry& wide_area, const OpCharge& charge) {
  LedgerEntry e = wide_area;
  e.sent_bytes = charge.sent;
  e.received_bytes = charge.received;
  e.network_seconds = charge.seconds - charge.intra_seconds;
  ledger_.record(e);
  if (island_ != nullptr && (charge.intra_sent > 0 || charge.intra_received > 0 || charge.intra_seconds > 0)) {
    LedgerEntry in = wide_area;
    in.sent_bytes = charge.intra_sent;
    in.received_bytes = charge.intra_received;
    in.network_seconds = charge.intra_seconds;
    island_->ledger_.record(in);
  }
  return charge.seconds;
}

double Communicator::island_all_reduce(at::Tensor& work, ReduceOp op, double arrival, double network_seconds) {
  // The island's devices reach the op together (their gradient average
  // lines them up), and the pattern's whole time is charged to the
  // wide-area op; the island's own steps add no time of their own here.
  if (islands_->exchange() == IslandExchange::Leader) {
    // A device that waits for its leader is done when the pattern's time
    // has passed (a real rank knows only its own arrival).
    const double done =
        island_device_ == 0 ? do_all_reduce(work, op, arrival, network_seconds) : arrival + network_seconds;
    return island_->do_broadcast(work, 0, done, 0.0);
  }
  // Sharded: device d reduces elements [d * n / D, (d + 1) * n / D) with
  // device d of the other islands, then the island gathers the slices.
  const int64_t devices = islands_->devices(), n = work.numel();
  at::Tensor flat = work.view({-1});
  const int64_t from = island_device_ * n / devices, to = (island_device_ + 1) * n / devices;
  at::Tensor slice = flat.narrow(0, from, to - from).clone();
  const double done = do_all_reduce(slice, op, arrival, network_seconds);
  std::vector<at::Tensor> slices;
  const double completion =
      island_->do_all_gather(slice, slices, done, [](const std::vector<int64_t>&) { return 0.0; });
  int64_t at = 0;
  for (const at::Tensor& part : slices) {
    flat.narrow(0, at, part.numel()).copy_(part.view({-1}));
    at += part.numel();
  }
  return completion;
}

double Communicator::after_outages(double completion, double network_seconds,
                                   const std::vector<int64_t>& participants) const {
  if (net_ == nullptr || net_->outages().empty()) return completion;
  const double start = completion - network_seconds;
  return net_->link_available_at(start, participants) + network_seconds;
}

void Communicator::finish(double completion) {
  if (clock_ != nullptr) clock_->wait_until(completion);
}

void Communicator::all_reduce(at::Tensor& t, ReduceOp op, const std::string& tag, double wire_bytes) {
  require_defined(t, "all_reduce", "t");
  const double payload = wire_bytes >= 0 ? wire_bytes : payload_bytes(t);
  trace_call({TracedOp::AllReduce, 0, payload, 0, {}, tag});
  const double net = record(CommOp::AllReduce, tag, payload, false, {});
  const double arrival = arrival_time();
  at::Tensor work = contiguous_work(t);
  const double moved =
      moves_by_pattern() ? island_all_reduce(work, op, arrival, net) : do_all_reduce(work, op, arrival, net);
  const double completion = after_outages(moved, net, {});
  copy_back(t, work);
  finish(completion);
}

namespace {
// The buckets' element count; each must hold at least one.
int64_t bucket_elements(const std::vector<int64_t>& buckets, const char* op) {
  int64_t total = 0;
  for (int64_t n : buckets) {
    if (n < 1) throw std::invalid_argument(std::string(op) + ": every bucket needs >= 1 element");
    total += n;
  }
  if (buckets.empty()) throw std::invalid_argument(std::string(op) + ": no buckets");
  return total;
}
}  // namespace

void Communicator::all_reduce_overlapped(at::Tensor& t, ReduceOp op, const std::string& tag,
                                         const std::vector<int64_t>& buckets, double wire_bytes) {
  require_defined(t, "all_reduce_overlapped", "t");
  const int64_t total = bucket_elements(buckets, "all_reduce_overlapped");
  if (total != t.numel()) {
    throw std::invalid_argument("all_reduce_overlapped: the buckets hold " + std::to_string(total) +
                                " elements but the tensor has " + std::to_string(t.numel()));
  }
  overlapped(t, op, tag, buckets, total, wire_bytes >= 0 ? wire_bytes : payload_bytes(t));
}

void Communicator::replay_all_reduce_overlapped(at::Tensor& standin, const std::string& tag,
                                                const std::vector<int64_t>& buckets, double wire_bytes) {
  require_defined(standin, "replay_all_reduce_overlapped", "standin");
  if (!(wire_bytes >= 0)) throw std::invalid_argument("replay_all_reduce_overlapped: the wire size must be given");
  overlapped(standin, ReduceOp::Sum, tag, buckets, bucket_elements(buckets, "replay_all_reduce_overlapped"),
             wire_bytes);
}

void Communicator::overlapped(at::Tensor& t, ReduceOp op, const std::string& tag, const std::vector<int64_t>& buckets,
                              int64_t elements, double payload) {
  trace_call({TracedOp::AllReduceOverlapped, 0, payload, 0, buckets, tag});
  const double end_of_compute = arrival_time();
  const double compute = clock_ != nullptr ? clock_->compute_seconds() - step_compute_start_ : 0.0;
  const double backward = compute * 2.0 / 3.0;  // forward T/3, backward 2T/3
  double end = end_of_compute;
  double bytes_so_far = 0;
  int64_t produced_elements = 0;
  for (size_t j = 0; j < buckets.size(); ++j) {
    produced_elements += buckets[j];
    const bool last = j + 1 == buckets.size();
    // The last bucket takes the remainder, so the entries add up to the payload.
    const double bytes = last ? payload - bytes_so_far : payload * double(buckets[j]) / double(elements);
    bytes_so_far += bytes;
    const double net = record(CommOp::AllReduce, tag, bytes, false, {});
    const double produced = last ? 1.0 : double(produced_elements) / double(elements);  // c_j
    const double ready = end_of_compute - backward * (1.0 - produced);
    const double start = j == 0 ? ready : std::max(ready, end);
    end = after_outages(start + net, net, {});
  }
  // One reduction of the whole tensor (values as all_reduce's). The backend
  // completes an op at the latest arrival plus the network time; arriving at
  // this rank's own end with no further network time makes that the latest
  // rank's end, the joint schedule's (see comm.h).
  at::Tensor work = contiguous_work(t);
  const double arrival = std::max(end, end_of_compute);
  const double completion =
      moves_by_pattern() ? island_all_reduce(work, op, arrival, 0.0) : do_all_reduce(work, op, arrival, 0.0);
  copy_back(t, work);
  finish(completion);
}

// The in-process backend moves the data now; only the simulated clock is
// deferred to wait(). That is exact: every rank reaches the op at the same
// training step, so the values equal what a real overlapped all-reduce
// delivers at wait(); what overlap changes is time, and time is charged from
// `completion` when the Work is waited on (so compute done in between hides
// the communication). A real backend leaves the op in flight until wait().
Work Communicator::all_reduce_async(at::Tensor& t, ReduceOp op, const std::string& tag, double wire_bytes) {
  require_defined(t, "all_reduce_async", "t");
  const double payload = wire_bytes >= 0 ? wire_bytes : payload_bytes(t);
  const int64_t id = trace_call({TracedOp::AllReduceAsync, 0, payload, 0, {}, tag});
  const double net = record(CommOp::AllReduce, tag, payload, false, {});
  const double arrival = arrival_time();
  at::Tensor work = contiguous_work(t);
  double completion = 0;
  // Islands' leader and sharded paths are two ops in sequence: they move
  // the data now (a real run's overlap is then lost; the clock still
  // charges only what compute did not hide).
  std::function<void()> in_flight = nullptr;
  if (moves_by_pattern()) {
    completion = island_all_reduce(work, op, arrival, net);
  } else {
    in_flight = start_all_reduce(work, op, arrival, net, completion);
  }
  completion = after_outages(completion, net, {});
  if (!in_flight) {
    copy_back(t, work);
    return traced(Work(this, completion, nullptr), id);
  }
  return traced(Work(this, completion,
                     [in_flight, t, work]() mutable {
                       in_flight();
                       copy_back(t, work);
                     }),
                id);
}

void Communicator::all_gather(const at::Tensor& in, std::vector<at::Tensor>& out, const std::string& tag) {
  require_defined(in, "all_gather", "in");
  const at::Tensor src = contiguous_work(in);
  trace_call({TracedOp::AllGather, 0, payload_bytes(src), 0, {}, tag});
  const uint64_t index = op_index_++;
  // Variable sizes: the time of the gather is set by the largest message.
  const NetworkModel* net = net_;
  const IslandNetwork* islands = islands_;
  const int64_t device = island_device_, self = rank_;
  // Islands: the charge of the gather for this device, given every island's size.
  auto island_charge = [islands, device, self, index](const std::vector<int64_t>& sizes) {
    int64_t largest = 0;
    double others = 0;
    for (size_t r = 0; r < sizes.size(); ++r) {
      largest = std::max(largest, sizes[r]);
      if (static_cast<int64_t>(r) != self) others += static_cast<double>(sizes[r]);
    }
    return islands->charge(CommOp::AllGather, static_cast<double>(sizes.at(self)), static_cast<double>(largest), others,
                           device, false, {}, index);
  };
  const std::function<double(const std::vector<int64_t>&)> seconds_for = [net, islands, island_charge,
                                                                          index](const std::vector<int64_t>& sizes) {
    if (islands != nullptr) return island_charge(sizes).seconds;
    if (net == nullptr) return 0.0;
    int64_t largest = 0;
    for (int64_t s : sizes) largest = std::max(largest, s);
    return net->collective_seconds(CommOp::AllGather, static_cast<double>(largest), index);
  };
  const double arrival = arrival_time();
  const double completion = do_all_gather(src, out, arrival, seconds_for);

  // Recorded after the op: what this rank receives depends on the others' sizes.
  std::vector<int64_t> sizes;
  sizes.reserve(out.size());
  double received = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    const double b = payload_bytes(out[r]);
    sizes.push_back(static_cast<int64_t>(b));
    if (static_cast<int64_t>(r) != rank_) received += b;
  }
  LedgerEntry e;
  e.step = step_;
  e.op = CommOp::AllGather;
  e.tag = tag;
  e.payload_bytes = payload_bytes(src);
  // (N - 1) S_own peer to peer; S_own once through a relay.
  e.sent_bytes = bytes_for(CommOp::AllGather, algo_, e.payload_bytes, size_, false).sent;
  e.received_bytes = received;
  if (islands != nullptr) {
    const double seconds = record_charge(e, island_charge(sizes));
    finish(after_outages(completion, seconds, {}));
    return;
  }
  e.network_seconds = seconds_for(sizes);
  ledger_.record(e);
  finish(after_outages(completion, e.network_seconds, {}));
}

void Communicator::broadcast(at::Tensor& t, int64_t root, const std::string& tag) {
  require_defined(t, "broadcast", "t");
  check_rank_arg(root, rank_, size_, "broadcast", "root", /*allow_self=*/true);
  trace_call({TracedOp::Broadcast, 0, payload_bytes(t), root, {}, tag});
  const double net = record(CommOp::Broadcast, tag, payload_bytes(t), rank_ == root, {});
  const double arrival = arrival_time();
  at::Tensor work = contiguous_work(t);
  const double completion = after_outages(do_broadcast(work, root, arrival, net), net, {});
  copy_back(t, work);
  finish(completion);
}

void Communicator::barrier() {
  trace_call({TracedOp::Barrier, 0, 0.0, 0, {}, "barrier"});
  const double net = record(CommOp::Barrier, "barrier", 0.0, false, {});
  const double arrival = arrival_time();
  finish(do_barrier(arrival, net));
}

void Communicator::exchange(const at::Tensor& send, at::Tensor& recv, int64_t peer, const std::string& tag) {
  require_defined(send, "exchange", "send");
  require_defined(recv, "exchange", "recv");
  check_rank_arg(peer, rank_, size_, "exchange", "peer", /*allow_self=*/false);
  if (send.sizes() != recv.sizes() || send.scalar_type() != recv.scalar_type()) {
    std::ostringstream msg;
    msg << "exchange: `recv` must have the shape and dtype of `send`; got send " << send.sizes() << " "
        << send.scalar_type() << " and recv " << recv.sizes() << " " << recv.scalar_type();
    throw std::invalid_argument(msg.str());
  }
  trace_call({TracedOp::Exchange, 0, payload_bytes(send), peer, {}, tag});
  const double net = record(CommOp::Exchange, tag, payload_bytes(send), false, {rank_, peer});
  const double arrival = arrival_time();
  const at::Tensor src = contiguous_work(send);
  std::vector<at::Tensor> dst{contiguous_work(recv)};
  const double completion = after_outages(do_exchange(src, dst, {peer}, arrival, net), net, {rank_, peer});
  copy_back(recv, dst[0]);
  finish(completion);
}

double Communicator::start_exchange_with(const at::Tensor& send, std::vector<at::Tensor>& recvs,
                                         const std::vector<int64_t>& peers, const std::string& tag, double wire_bytes,
                                         std::function<void()>* in_flight, int64_t* trace_id) {
  require_defined(send, "exchange_with", "send");
  std::vector<int64_t> participants{rank_};
  for (int64_t p : peers) {
    check_rank_arg(p, rank_, size_, "exchange_with", "peer", /*allow_self=*/false);
    if (std::find(participants.begin(), participants.end(), p) != participants.end())
      throw std::invalid_argument("exchange_with: peer " + std::to_string(p) + " is listed twice; list each peer once");
    participants.push_back(p);
  }
  const double each = wire_bytes >= 0 ? wire_bytes : payload_bytes(send);
  const int64_t id =
      trace_call({in_flight != nullptr ? TracedOp::ExchangeWithAsync : TracedOp::ExchangeWith, 0, each, 0, peers, tag});
  if (trace_id != nullptr) *trace_id = id;
  const double total = each * static_cast<double>(peers.size());
  const double net = record(CommOp::Exchange, tag, total, false, participants);
  const double arrival = arrival_time();
  const at::Tensor src = contiguous_work(send);
  recvs.clear();
  for (size_t i = 0; i < peers.size(); ++i) recvs.push_back(at::empty_like(src));
  if (peers.empty()) return arrival;
  if (in_flight == nullptr) return after_outages(do_exchange(src, recvs, peers, arrival, net), net, participants);
  double completion = 0;
  *in_flight = start_exchange(src, recvs, peers, arrival, net, completion);
  return after_outages(completion, net, participants);
}

void Communicator::exchange_with(const at::Tensor& send, std::vector<at::Tensor>& recvs,
                                 const std::vector<int64_t>& peers, const std::string& tag, double wire_bytes) {
  finish(start_exchange_with(send, recvs, peers, tag, wire_bytes, nullptr, nullptr));
}

Work Communicator::exchange_with_async(const at::Tensor& send, std::vector<at::Tensor>& recvs,
                                       const std::vector<int64_t>& peers, const std::string& tag, double wire_bytes) {
  std::function<void()> in_flight;
  int64_t id = -1;
  const double completion = start_exchange_with(send, recvs, peers, tag, wire_bytes, &in_flight, &id);
  return traced(Work(this, completion, std::move(in_flight)), id);
}

void Communicator::send(const at::Tensor& t, int64_t dst, const std::string& tag) {
  require_defined(t, "send", "t");
  check_rank_arg(dst, rank_, size_, "send", "dst", /*allow_self=*/false);
  trace_call({TracedOp::Send, 0, payload_bytes(t), dst, {}, tag});
  const double net = record(CommOp::Send, tag, payload_bytes(t), false, {rank_, dst});
  const double arrival = arrival_time();
  finish(do_send(contiguous_work(t), dst, arrival, net));
}

void Communicator::recv(at::Tensor& t, int64_t src, const std::string& tag) {
  require_defined(t, "recv", "t");
  check_rank_arg(src, rank_, size_, "recv", "src", /*allow_self=*/false);
  trace_call({TracedOp::Recv, 0, payload_bytes(t), src, {}, tag});
  const double net = record(CommOp::Recv, tag, payload_bytes(t), false, {src, rank_});
  const double arrival = arrival_time();
  at::Tensor work = contiguous_work(t);
  const double completion = do_recv(work, src, arrival, net);
  copy_back(t, work);
  finish(completion);
}

}  // namespace atl
