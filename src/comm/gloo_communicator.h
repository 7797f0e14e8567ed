// The Communicator backend over a c10d process group (Gloo): moves the data
// of every op, times it, and relays through rank 0's host when
// network.algorithm = ps (relay). The ledger and the simulated clock are the
// front end's (communicator.cpp); the group that connects and watches the
// ranks is gloo_group.cpp's. Included by gloo_group.cpp only.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <ATen/ATen.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/comm.h"

namespace atl {
namespace gloo_detail {

using Clock = std::chrono::steady_clock;

// Peers declare the lengths of what they send before sending it; every
// rank allocates the largest. A length outside 0..kMaxPeerBytes (a bug or a
// rogue rank: -1, 2^40) is refused before anything is allocated.
constexpr int64_t kMaxPeerBytes = int64_t(1) << 31;

int64_t checked_peer_length(int64_t elements, int64_t element_size, int64_t rank, const char* what) {
  if (elements < 0 || elements > kMaxPeerBytes / element_size)
    throw std::runtime_error("rank " + std::to_string(rank) + " declared a " + what + " of " +
                             std::to_string(elements) + " elements of " + std::to_string(element_size) +
                             " bytes (allowed: 0 to " + std::to_string(kMaxPeerBytes) +
                             " bytes): refusing it (a rank running other code?)");
  return elements;
}

// The rank whose host relays network.algorithm = ps's payloads in a real run.
constexpr int64_t kRelayRank = 0;

// The Communicator backend: every op runs on the process group and waits.
// `where` names this rank in its errors: "rank 3" for the world group, with
// the subgroup added for an island's or a cross group's communicator.
class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroup> pg, CollectiveAlgo algo,
                   std::function<std::string(const std::string&)> diagnose, std::string where)
      : Communicator(pg->getRank(), pg->getSize(), algo),
        pg_(std::move(pg)),
        diagnose_(std::move(diagnose)),
        where_(std::move(where)),
        send_seq_(size(), 0),
        recv_seq_(size(), 0) {}

  double measured_seconds() const { return measured_; }
  c10d::ProcessGroup& pg() { return *pg_; }

  // Runs process-group work; failures are rethrown naming the lost rank
  // where it can be found.
  template <class F>
  void guarded(const char* what, F&& op) {
    try {
      op();
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(what) + " on " + where_ + " failed: " + diagnose_(e.what()));
    }
  }
  // A communicator op: guarded, and its wall time measured. With
  // sync_before_ops an untimed barrier first lines the ranks up, so the
  // measurement is the transfer alone, not the wait for a slower peer.
  template <class F>
  void timed(const char* what, F&& op, bool line_up = true) {
    if (line_up && sync_before_ops_) guarded("barrier before timing", [&] { pg_->barrier()->wait(); });
    const auto t0 = Clock::now();
    guarded(what, op);
    measured_ += std::chrono::duration<double>(Clock::now() - t0).count();
  }
  void set_sync_before_ops(bool on) { sync_before_ops_ = on; }

 protected:
  double do_all_reduce(at::Tensor& t, ReduceOp op, double arrival, double network_seconds) override {
    double completion = 0;
    start_all_reduce(t, op, arrival, network_seconds, completion)();
    return completion;
  }

  // Posts the all-reduce to the group's worker thread and returns at once;
  // the returned function waits for it (measured: the exposed time) and
  // applies Mean with the same division as the in-process group, so N = 2
  // results are bitwise equal.
  std::function<void()> start_all_reduce(at::Tensor& t, ReduceOp op, double arrival, double network_seconds,
                                         double& completion) override {
    if (op == ReduceOp::Mean && t.scalar_type() == at::kBool)
      throw std::invalid_argument("all_reduce: Mean is undefined for bool tensors");
    c10::intrusive_ptr<c10d::Work> work;
    const bool relay = algorithm() == CollectiveAlgo::ParameterServer;
    timed("all_reduce", [&] {
      std::vector<at::Tensor> v{t};
      if (relay) {
        c10d::ReduceOptions o;
        o.reduceOp = c10d::ReduceOp::SUM;
        o.rootRank = kRelayRank;
        work = pg_->reduce(v, o);
      } else {
        c10d::AllreduceOptions o;
        o.reduceOp = c10d::ReduceOp::SUM;
        work = pg_->allreduce(v, o);
      }
    });
    completion = arrival + network_seconds;
    return [this, work, t, op, relay]() mutable {
      timed(
          "all_reduce", [&] { work->wait(); }, /*line_up=*/false);
      // The relay sends the sum back down once it has every payload.
      if (relay)
        timed(
            "all_reduce (relay)", [&] { broadcast_from_relay(t); }, /*line_up=*/false);
      if (op != ReduceOp::Mean) return;
      if (at::isFloatingType(t.scalar_type())) {
        t.div_(static_cast<double>(size()));
      } else {
        t.copy_(at::div(t, size(), "trunc"));
      }
    };
  }

  double do_all_gather(const at::Tensor& in, std::vector<at::Tensor>& out, double arrival,
                       const std::function<double(const std::vector<int64_t>&)>& seconds_for) override {
    // Sizes first (they may differ between ranks), then one padded gather.
    std::vector<int64_t> bytes;
    timed("all_gather", [&] { gather_variable(in, out, bytes); });
    return arrival + seconds_for(bytes);
  }

  void gather_variable(const at::Tensor& in, std::vector<at::Tensor>& out, std::vector<int64_t>& bytes) {
    const at::Tensor flat = in.reshape({-1});
    at::Tensor my_size = at::full({1}, flat.numel(), at::kLong);
    std::vector<at::Tensor> sizes_t;
    gather_equal(my_size, sizes_t);
    int64_t largest = 0;
    std::vector<int64_t> numels;
    for (size_t r = 0; r < sizes_t.size(); ++r) {
      numels.push_back(checked_peer_length(sizes_t[r].item<int64_t>(), in.element_size(), int64_t(r), "payload"));
      bytes.push_back(numels.back() * static_cast<int64_t>(in.element_size()));
      largest = std::max(largest, numels.back());
    }
    out.clear();
    if (largest == 0) {
      for (int64_t r = 0; r < size(); ++r) out.push_back(at::empty({0}, in.options()));
    } else {
      at::Tensor padded = at::zeros({largest}, in.options());
      padded.narrow(0, 0, flat.numel()).copy_(flat);
      std::vector<at::Tensor> parts;
      gather_equal(padded, parts);
      for (int64_t r = 0; r < size(); ++r) out.push_back(parts[r].narrow(0, 0, numels[r]).clone());
    }
  }

  double do_broadcast(at::Tensor& t, int64_t root, double arrival, double network_seconds) override {
    timed("broadcast", [&] {
      std::vector<at::Tensor> v{t};
      c10d::BroadcastOptions o;
      o.rootRank = root;
      pg_->broadcast(v, o)->wait();
    });
    return arrival + network_seconds;
  }

  double do_barrier(double arrival, double network_seconds) override {
    timed("barrier", [&] { pg_->barrier()->wait(); });
    return arrival + network_seconds;
  }

  double do_exchange(const at::Tensor& send, std::vector<at::Tensor>& recvs, const std::vector<int64_t>& peers,
                     double arrival, double network_seconds) override {
    double completion = 0;
    start_exchange(send, recvs, peers, arrival, network_seconds, completion)();
    return completion;
  }

  // Posts every send, then every receive; the returned function waits for
  // all of them. No peer order can deadlock. Each direction of each pair
  // numbers its messages, and the number is the Gloo tag, so a pair's
  // messages match in call order.
  std::function<void()> start_exchange(const at::Tensor& send, std::vector<at::Tensor>& recvs,
                                       const std::vector<int64_t>& peers, double arrival, double network_seconds,
                                       double& completion) override {
    auto pending = std::make_shared<std::vector<c10::intrusive_ptr<c10d::Work>>>();
    auto bufs = std::make_shared<std::vector<std::vector<at::Tensor>>>();
    bufs->reserve(2 * peers.size());
    timed("exchange", [&] {
      for (int64_t p : peers) {
        bufs->push_back({send});
        pending->push_back(pg_->send(bufs->back(), static_cast<int>(p), next_tag(send_seq_, p)));
      }
      for (size_t i = 0; i < peers.size(); ++i) {
        bufs->push_back({recvs[i]});
        pending->push_back(pg_->recv(bufs->back(), static_cast<int>(peers[i]), next_tag(recv_seq_, peers[i])));
      }
    });
    completion = arrival + network_seconds;
    return [this, pending, bufs] {
      timed(
          "exchange",
          [&] {
            for (auto& w : *pending) w->wait();
          },
          /*line_up=*/false);
    };
  }

  // Buffered like the in-process group: Gloo's send completes only when the
  // peer posts its receive, so a blocking send would deadlock a ring of
  // send-then-recv. The payload is copied and the send left in flight; it is
  // reaped by later ops and awaited at the latest by drain_sends().
  double do_send(const at::Tensor& t, int64_t dst, double arrival, double network_seconds) override {
    reap_sends();
    timed("send", [&] {
      std::vector<at::Tensor> v{t.clone()};
      in_flight_.push_back({pg_->send(v, static_cast<int>(dst), next_tag(send_seq_, dst)), v});
    });
    return arrival + network_seconds;
  }

  double do_recv(at::Tensor& t, int64_t src, double arrival, double network_seconds) override {
    timed("recv", [&] {
      std::vector<at::Tensor> v{t};
      pg_->recv(v, static_cast<int>(src), next_tag(recv_seq_, src))->wait();
    });
    return arrival + network_seconds;
  }

 public:
  // Equal-size all-gather (1-D): `out` gets size() tensors in rank order.
  void gather_equal(const at::Tensor& t, std::vector<at::Tensor>& out) {
    if (algorithm() == CollectiveAlgo::ParameterServer) return gather_through_relay(t, out);
    std::vector<std::vector<at::Tensor>> outs(1);
    for (int64_t r = 0; r < size(); ++r) outs[0].push_back(at::empty_like(t));
    std::vector<at::Tensor> in{t};
    guarded("all_gather", [&] { pg_->allgather(outs, in)->wait(); });
    out = outs[0];
  }

  // network.algorithm = ps (relay) in a real run: rank 0's host is the relay.
  // Every rank's tensor goes up to it once, and it sends all of them down.
  void gather_through_relay(const at::Tensor& t, std::vector<at::Tensor>& out) {
    at::Tensor all = at::empty({size(), t.numel()}, t.options());
    guarded("all_gather (relay)", [&] {
      std::vector<std::vector<at::Tensor>> outs;
      if (rank() == kRelayRank) {
        outs.resize(1);
        for (int64_t r = 0; r < size(); ++r) outs[0].push_back(all[r]);
      }
      std::vector<at::Tensor> in{t.contiguous()};
      c10d::GatherOptions o;
      o.rootRank = kRelayRank;
      pg_->gather(outs, in, o)->wait();
    });
    guarded("all_gather (relay)", [&] { broadcast_from_relay(all); });
    out.clear();
    for (int64_t r = 0; r < size(); ++r) out.push_back(all[r]);
  }

  void broadcast_from_relay(at::Tensor& t) {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = kRelayRank;
    pg_->broadcast(v, o)->wait();
  }

  // Waits for every buffered send (before shutdown).
  void drain_sends() {
    guarded("send", [&] {
      for (auto& f : in_flight_) f.work->wait();
    });
    in_flight_.clear();
  }

 private:
  struct InFlightSend {
    c10::intrusive_ptr<c10d::Work> work;
    std::vector<at::Tensor> payload;  // kept alive until the send completes
  };
  void reap_sends() {
    std::vector<InFlightSend> open;
    for (auto& f : in_flight_) {
      if (!f.work->isCompleted()) {
        open.push_back(std::move(f));
      } else {
        guarded("send", [&] { f.work->wait(); });  // rethrows a failed send
      }
    }
    in_flight_ = std::move(open);
  }
  static int next_tag(std::vector<uint64_t>& seq, int64_t peer) { return static_cast<int>(seq[peer]++ & 0x7fffffff); }

  c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  std::function<std::string(const std::string&)> diagnose_;
  std::string where_;
  std::vector<uint64_t> send_seq_, recv_seq_;
  std::vector<InFlightSend> in_flight_;
  double measured_ = 0;
  bool sync_before_ops_ = false;
};

}  // namespace gloo_detail
}  // namespace atl
