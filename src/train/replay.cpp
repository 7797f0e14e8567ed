// Replaying timing traces: one thread per worker, as in a simulated run.
#include "train/replay.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "atoll/comm.h"
#include "atoll/net.h"
#include "train/sim_cluster.h"
#include "train/worker_networks.h"

namespace atl {
namespace {

ReplayReading read(const VirtualClock& clock, const Communicator& comm, const Communicator* island) {
  ReplayReading r;
  r.now = clock.now();
  r.compute = clock.compute_seconds();
  r.blocked = clock.blocked_seconds();
  r.sent = comm.ledger().total_sent();
  r.received = comm.ledger().total_received();
  r.network_s = comm.ledger().total_network_seconds();
  r.ops = comm.ledger().ops();
  if (island != nullptr) {
    r.intra_sent = island->ledger().total_sent();
    r.intra_received = island->ledger().total_received();
    r.intra_network_s = island->ledger().total_network_seconds();
  }
  return r;
}

// One worker's replay: the calls of its trace with stand-in tensors whose
// sizes (or wire_bytes) give the ledger and the network model the recorded
// payloads.
class WorkerReplay {
 public:
  WorkerReplay(int64_t rank, SimCluster& cluster, const WorkerNetworks& nets, const ReplayScale& scale,
               int64_t peak_window_steps)
      : rank_(rank),
        peak_window_steps_(peak_window_steps),
        comm_(cluster.comm(rank)),
        island_(cluster.island_comm(rank)),
        scale_(scale),
        devices_(nets.layout.devices) {
    nets.attach(rank, comm_, island_, clock_);
  }

  ReplayedWorker run(const TimingTrace& trace) {
    ReplayedWorker out;
    int64_t step = 0;
    trace.for_each([&](const TraceRecord& rec) {
      switch (rec.kind) {
        case TraceRecord::Kind::Step:
          out.at_step.push_back(read(clock_, comm_, island_));
          comm_.set_step(step);
          if (island_ != nullptr) island_->set_step(step);
          ++step;
          break;
        case TraceRecord::Kind::Compute:
          clock_.advance_compute(rec.seconds * scale_.compute);
          break;
        case TraceRecord::Kind::Wait: {
          const int64_t index = int64_t(works_.size()) - 1 - rec.waits_back;
          if (rec.waits_back < 0 || index < 0) fail("waits for an asynchronous call it never made");
          works_[size_t(index)].wait();
          break;
        }
        case TraceRecord::Kind::Call:
          call(rec.call);
          break;
      }
    });
    out.at_step.push_back(read(clock_, comm_, island_));
    out.sent_by_tag = comm_.ledger().sent_by_tag();
    out.received_by_tag = comm_.ledger().received_by_tag();
    out.peak_sent = comm_.ledger().peak_sent(peak_window_steps_);
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw TraceError("worker " + std::to_string(rank_) + "'s timing trace " + why);
  }
  at::Tensor bytes(double n) const {
    return at::zeros({static_cast<int64_t>(std::llround(n * scale_.bytes))}, at::kByte);
  }

  void call(const TracedCall& c) {
    if (c.channel == 1 && island_ == nullptr) fail("uses an island's group, but the run has no islands");
    Communicator& comm = c.channel == 1 ? *island_ : comm_;
    const double wire = c.bytes * scale_.bytes;
    switch (c.op) {
      case TracedOp::AllReduce:
        comm.all_reduce(small_, ReduceOp::Sum, c.tag, wire);
        break;
      case TracedOp::AllReduceAsync:
        works_.push_back(comm.all_reduce_async(small_, ReduceOp::Sum, c.tag, wire));
        break;
      case TracedOp::AllReduceOverlapped:
        // The recorded buckets set when each share is ready; the values
        // reduced are small_'s.
        comm.replay_all_reduce_overlapped(small_, c.tag, c.list, wire);
        break;
      case TracedOp::AllGather: {
        std::vector<at::Tensor> out;
        comm.all_gather(bytes(c.bytes), out, c.tag);
        break;
      }
      case TracedOp::Broadcast: {
        at::Tensor t = bytes(c.bytes);
        comm.broadcast(t, c.rank, c.tag);
        break;
      }
      case TracedOp::Barrier:
        comm.barrier();
        break;
      case TracedOp::Exchange: {
        at::Tensor recv = bytes(c.bytes);
        comm.exchange(bytes(c.bytes), recv, c.rank, c.tag);
        break;
      }
      case TracedOp::ExchangeWith:
      case TracedOp::ExchangeWithAsync: {
        if (c.op == TracedOp::ExchangeWith) {
          comm.exchange_with(one_byte_, received_, c.list, c.tag, wire);
        } else {
          works_.push_back(comm.exchange_with_async(one_byte_, received_, c.list, c.tag, wire));
        }
        break;
      }
      case TracedOp::Send:
        comm.send(bytes(c.bytes), c.rank, c.tag);
        break;
      case TracedOp::Recv: {
        at::Tensor t = bytes(c.bytes);
        comm.recv(t, c.rank, c.tag);
        break;
      }
    }
  }

  int64_t rank_;
  int64_t peak_window_steps_;
  Communicator& comm_;
  Communicator* island_;
  ReplayScale scale_;
  int64_t devices_;
  VirtualClock clock_;
  std::vector<Work> works_;
  // Stand-ins made once: all_reduce's has one element per device, so every
  // device of a sharded exchange has a slice (the wire size is given
  // separately); exchange_with sends one byte with the recorded wire size.
  // The in-process group delivers at once, so one output list serves every call.
  at::Tensor small_ = at::zeros({std::max<int64_t>(1, devices_)}, at::kFloat);
  at::Tensor one_byte_ = at::zeros({1}, at::kByte);
  std::vector<at::Tensor> received_;
};

}  // namespace

std::vector<ReplayedWorker> replay_traces(const Config& cfg, const std::vector<TimingTrace>& traces,
                                          const ReplayScale& scale) {
  const int64_t n = cfg.strategy.workers;
  if (int64_t(traces.size()) != n)
    throw TraceError("the run has " + std::to_string(n) + " workers but " + std::to_string(traces.size()) +
                     " timing traces");
  WorkerNetworks nets(cfg);
  SimCluster cluster(n, parse_algorithm(cfg.network.algorithm), nets.layout);
  std::vector<ReplayedWorker> out(size_t(n), ReplayedWorker{});
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        WorkerReplay worker(r, cluster, nets, scale, cfg.run.peak_window_steps);
        out[size_t(r)] = worker.run(traces[size_t(r)]);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) {
          first_error = std::current_exception();
          cluster.abort(std::string("replay of worker ") + std::to_string(r) + " failed: " + e.what());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  for (int64_t r = 1; r < n; ++r)
    if (out[size_t(r)].at_step.size() != out[0].at_step.size())
      throw TraceError("worker " + std::to_string(r) + "'s timing trace has " +
                       std::to_string(out[size_t(r)].at_step.size() - 1) + " steps but worker 0's has " +
                       std::to_string(out[0].at_step.size() - 1));
  return out;
}

}  // namespace atl
