// DistGroup over c10d::ProcessGroupGloo (see atoll/dist.h).
//
// The Communicator subclass only moves data: the front end (communicator.cpp)
// keeps the ledger and the simulated clock exactly as for the in-process
// group, so a real run's ledger equals the simulated one. The *_async ops
// stay in flight until their Work is waited on, so compute overlaps them
// for real; the measured time of such an op is what its wait exposed.
//
// Failure diagnosis: Gloo reports a dead peer as "connection closed by peer
// <ip:port>", which names no rank. Each rank therefore beats a counter in the
// store from a heartbeat thread (its own store connection) and leaves its
// error in the store before exiting on one; a rank whose op fails reads those
// to say which rank was lost and why. If the store itself is gone, rank 0
// (its host) is the one lost.
//
// Islands (island_devices = D > 1): besides the world group, every rank
// joins two more process groups over prefixes of the same store, its
// island's ("atoll/island/<i>") and its device index's cross-island group
// ("atoll/cross/<d>"). The prefixes keep the groups' rendezvous keys apart
// (every group's Gloo rendezvous writes the same keys, "<transport
// index>/<rank>", so unprefixed groups would read each other's addresses);
// each group has its own connections, worker thread and op tags, so ops of
// different groups never match each other. Failures are diagnosed with the
// world's heartbeats, since a lost rank is lost to every group.
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "atoll/config.h"
#include "atoll/dist.h"
#include "comm/auth_store.h"
#include "comm/gloo_communicator.h"
#include "comm/gloo_group.h"
#include "comm/gloo_rendezvous.h"

namespace atl {
namespace {

using gloo_detail::checked_peer_length;
using gloo_detail::Clock;
using gloo_detail::GlooCommunicator;

std::string key_failed(int64_t r) { return "atoll/failed/" + std::to_string(r); }
std::string key_beat(int64_t r) { return "atoll/beat/" + std::to_string(r); }

// "ranks 1, 3, 5" (every `stride`th rank from `first`, `count` of them),
// shortened to "ranks 1, 3, ..., 15" past four.
std::string strided_ranks(int64_t first, int64_t stride, int64_t count) {
  std::string out = count == 1 ? "rank " : "ranks ";
  for (int64_t k = 0; k < count; ++k) {
    if (count > 4 && k == 2) {
      out += ", ...";
      k = count - 1;
    }
    out += (k == 0 ? "" : ", ") + std::to_string(first + k * stride);
  }
  return out;
}

class GlooDistGroup final : public DistGroup {
 public:
  // `stores.beat_store`: a second connection for the heartbeat thread (null: none).
  // `island_devices` > 1 (already validated): also the island and cross groups.
  // `stores.server` (rank 0 of a real run) is kept for the group's life;
  // with `prove`, every group's connections prove the job token.
  GlooDistGroup(RendezvousStores stores, int64_t rank, int64_t size, const DistOptions& opts, CollectiveAlgo algo,
                int64_t island_devices, bool prove)
      : server_(std::move(stores.server)),
        store_(std::move(stores.store)),
        beat_store_(std::move(stores.beat_store)),
        opts_(opts) {
    // One transport device for every group of this rank: Gloo keeps each
    // group's connections apart, and one device is one listening socket and
    // one event loop thread instead of three.
    const auto device = make_device(opts);
    const std::string timeout = " within " + std::to_string(int(opts.timeout_s)) + " s: ";
    const std::string ifname_hint = "set GLOO_SOCKET_IFNAME to the interface the hosts reach each other on";
    comm_ =
        connect_group(store_, device, rank, size, algo, "rank " + std::to_string(rank), [&](const std::string& cause) {
          return "rank " + std::to_string(rank) + " could not connect the Gloo group of " + std::to_string(size) +
                 timeout + cause + " (are all ranks started with the same WORLD_SIZE? " + ifname_hint + ")";
        });
    // Every rank proves the world group's connections before connecting
    // more, so ranks that disagree about the islands still pass this point
    // together and fail below naming the island group.
    const std::string nonce = prove ? gloo_proof_nonce(*store_) : std::string();
    if (prove) prove_connections(*comm_, nonce, "the world group");
    if (island_devices > 1) {
      const int64_t d = rank % island_devices, i = rank / island_devices, islands = size / island_devices;
      const std::string members_hint =
          " (do all ranks run with the same islands.devices = " + std::to_string(island_devices) + "? " + ifname_hint +
          ")";
      island_ = connect_group(c10::make_intrusive<c10d::PrefixStore>("atoll/island/" + std::to_string(i), store_),
                              device, d, island_devices, algo,
                              "rank " + std::to_string(rank) + " (device " + std::to_string(d) + " in island " +
                                  std::to_string(i) + "'s group)",
                              [&](const std::string& cause) {
                                return "rank " + std::to_string(rank) + " could not connect island " +
                                       std::to_string(i) + "'s Gloo group (ranks " +
                                       std::to_string(i * island_devices) + ".." +
                                       std::to_string(i * island_devices + island_devices - 1) + ", as its rank " +
                                       std::to_string(d) + ")" + timeout + cause + members_hint;
                              });
      cross_ = connect_group(
          c10::make_intrusive<c10d::PrefixStore>("atoll/cross/" + std::to_string(d), store_), device, i, islands, algo,
          "rank " + std::to_string(rank) + " (island " + std::to_string(i) + " in device " + std::to_string(d) +
              "'s cross group)",
          [&](const std::string& cause) {
            return "rank " + std::to_string(rank) + " could not connect device " + std::to_string(d) +
                   "'s cross-island Gloo group (" + strided_ranks(d, island_devices, islands) + ", as its rank " +
                   std::to_string(i) + ")" + timeout + cause + members_hint;
          });
    }
    if (prove) {  // island and cross groups: each as soon as it connects, as the world group above
      if (island_) prove_connections(*island_, nonce, "island " + std::to_string(rank / island_devices) + "'s group");
      if (cross_)
        prove_connections(*cross_, nonce, "device " + std::to_string(rank % island_devices) + "'s cross group");
    }
    if (beat_store_) beat_thread_ = std::thread([this] { beat(); });
  }

  ~GlooDistGroup() override { stop_beat(); }

  Communicator& comm() override { return *comm_; }
  Communicator* island_comm() override { return island_.get(); }
  Communicator* cross_comm() override { return cross_.get(); }
  int64_t rank() const override { return comm_->rank(); }
  int64_t size() const override { return comm_->size(); }
  double measured_comm_seconds() const override {
    double s = comm_->measured_seconds();
    if (island_) s += island_->measured_seconds();
    if (cross_) s += cross_->measured_seconds();
    return s;
  }

  std::vector<at::Tensor> raw_all_gather(const at::Tensor& t) override {
    std::vector<at::Tensor> out;
    comm_->gather_equal(t.contiguous(), out);
    return out;
  }
  void raw_barrier() override {
    comm_->guarded("observer barrier", [&] { comm_->pg().barrier()->wait(); });
  }
  std::vector<std::string> raw_all_gather_strings(const std::string& s) override {
    std::vector<at::Tensor> lens;
    comm_->gather_equal(at::full({1}, static_cast<int64_t>(s.size()), at::kLong), lens);
    int64_t largest = 1;
    for (size_t r = 0; r < lens.size(); ++r)
      largest = std::max(largest, checked_peer_length(lens[r].item<int64_t>(), 1, int64_t(r), "message"));
    at::Tensor buf = at::zeros({largest}, at::kByte);
    std::memcpy(buf.data_ptr<uint8_t>(), s.data(), s.size());
    std::vector<at::Tensor> parts;
    comm_->gather_equal(buf, parts);
    std::vector<std::string> out;
    for (size_t r = 0; r < parts.size(); ++r) {
      const auto* p = parts[r].data_ptr<uint8_t>();
      out.emplace_back(reinterpret_cast<const char*>(p), static_cast<size_t>(lens[r].item<int64_t>()));
    }
    return out;
  }

  void report_failure(const std::string& message) override {
    try {
      store_->set(key_failed(rank()), std::vector<uint8_t>(message.begin(), message.end()));
    } catch (...) {
      // The store is gone (rank 0 died): the others will find that out themselves.
      return;
    }
    // Rank 0 hosts the store: it stays a moment so that the others, whose
    // ops fail as soon as it stops, can still read why.
    if (rank() == 0 && size() > 1) std::this_thread::sleep_for(to_ms(3 * opts_.heartbeat_s));
  }
  void finish() override {
    stop_beat();
    comm_->drain_sends();
    if (island_) island_->drain_sends();
    if (cross_) cross_->drain_sends();
    raw_barrier();
  }

 private:
  // A process group of `size` ranks over `store` (this rank is `rank` in it)
  // and its communicator; `connect_error` words a failure to connect.
  std::unique_ptr<GlooCommunicator> connect_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                  const std::shared_ptr<::gloo::transport::Device>& device,
                                                  int64_t rank, int64_t size, CollectiveAlgo algo,
                                                  const std::string& where,
                                                  const std::function<std::string(const std::string&)>& connect_error) {
    auto pg_opts = c10d::ProcessGroupGloo::Options::create(to_ms(opts_.timeout_s));
    pg_opts->devices.push_back(device);
    pg_opts->threads = 1;  // one worker thread per group: the cores belong to compute
    c10::intrusive_ptr<c10d::ProcessGroup> pg;
    try {
      pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(rank), static_cast<int>(size), pg_opts);
    } catch (const std::exception& e) {
      throw std::runtime_error(connect_error(e.what()));
    }
    auto comm = std::make_unique<GlooCommunicator>(
        pg, algo, [this](const std::string& cause) { return diagnose(cause); }, where);
    comm->set_sync_before_ops(opts_.sync_before_ops);
    return comm;
  }

  // See check_gloo_proofs: every member's proof, gathered over the group's
  // own connections (outside the ledger and the clock).
  void prove_connections(GlooCommunicator& comm, const std::string& nonce, const std::string& group) {
    const Bytes mine = gloo_proof(opts_.job_token, nonce, group, comm.rank());
    at::Tensor t = at::empty({int64_t(mine.size())}, at::kByte);
    std::memcpy(t.data_ptr<uint8_t>(), mine.data(), mine.size());
    std::vector<at::Tensor> parts;
    comm.guarded("proving the job token over Gloo", [&] { comm.gather_equal(t, parts); });
    std::vector<Bytes> gathered;
    for (const auto& p : parts) gathered.emplace_back(p.data_ptr<uint8_t>(), p.data_ptr<uint8_t>() + p.numel());
    check_gloo_proofs(gathered, opts_.job_token, nonce, group, "rank " + std::to_string(rank()));
  }

  static std::shared_ptr<::gloo::transport::Device> make_device(const DistOptions& opts) {
    if (!opts.ifname.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(opts.ifname);
    // One box: loopback is always there, whatever the host name resolves to.
    if (opts.master_addr == "127.0.0.1" || opts.master_addr == "localhost")
      return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    return c10d::ProcessGroupGloo::createDefaultDevice();
  }

  void beat() {
    std::unique_lock<std::mutex> lock(beat_mutex_);
    while (!stop_) {
      try {
        beat_store_->add(key_beat(rank()), 1);
      } catch (...) {
        return;  // the store is gone; the worker thread will say so
      }
      beat_cv_.wait_for(lock, to_ms(opts_.heartbeat_s), [&] { return stop_; });
    }
  }
  void stop_beat() {
    {
      std::lock_guard<std::mutex> lock(beat_mutex_);
      stop_ = true;
    }
    beat_cv_.notify_all();
    if (beat_thread_.joinable()) beat_thread_.join();
  }

  // Turns a transport error into "which rank and why".
  std::string diagnose(const std::string& cause) {
    const std::string gloo = " (gloo: " + cause + ")";
    try {
      store_->setTimeout(to_ms(std::max(2.0, 3 * opts_.heartbeat_s)));
      auto failed = [&]() -> std::string {
        for (int64_t r = 0; r < size(); ++r)
          if (r != rank() && store_->check({key_failed(r)}))
            return "rank " + std::to_string(r) + " failed: " + store_string(*store_, key_failed(r));
        return "";
      };
      if (auto f = failed(); !f.empty()) return f;
      if (!beat_store_) return "a peer rank stopped" + gloo;
      auto beats = [&] {
        std::vector<int64_t> b;
        for (int64_t r = 0; r < size(); ++r) b.push_back(store_->add(key_beat(r), 0));
        return b;
      };
      const auto before = beats();
      std::this_thread::sleep_for(to_ms(2.5 * opts_.heartbeat_s));
      if (auto f = failed(); !f.empty()) return f;
      const auto after = beats();
      std::string lost;
      for (int64_t r = 0; r < size(); ++r)
        if (r != rank() && after[r] == before[r]) lost += (lost.empty() ? "" : ", ") + std::to_string(r);
      if (!lost.empty())
        return "lost rank " + lost + ": no heartbeat for " + std::to_string(2.5 * opts_.heartbeat_s).substr(0, 4) +
               " s (killed, crashed or unreachable)" + gloo;
      return "every rank still beats; the link itself failed or timed out after " +
             std::to_string(int(opts_.timeout_s)) + " s" + gloo;
    } catch (const std::exception&) {
      return "lost rank 0: the rendezvous store it hosts at " + opts_.master_addr + ":" +
             std::to_string(opts_.master_port) + " no longer answers" + gloo;
    }
  }

  std::shared_ptr<AuthStoreServer> server_;  // declared first: outlives the connections to it
  c10::intrusive_ptr<c10d::Store> store_, beat_store_;
  DistOptions opts_;
  std::unique_ptr<GlooCommunicator> comm_;
  std::unique_ptr<GlooCommunicator> island_, cross_;  // null without islands
  std::thread beat_thread_;
  std::mutex beat_mutex_;
  std::condition_variable beat_cv_;
  bool stop_ = false;
};

// Every island must have the same D devices, so D divides the world size.
void validate_island_devices(int64_t island_devices, int64_t world_size) {
  if (island_devices < 1 || world_size % island_devices != 0)
    throw std::invalid_argument("islands.devices = " + std::to_string(island_devices) +
                                " must be >= 1 and divide the world size " + std::to_string(world_size) +
                                " (every island has the same number of devices)");
}

}  // namespace

std::unique_ptr<DistGroup> connect_gloo(const DistOptions& opts, CollectiveAlgo ledger_algo,
                                        const std::string& fingerprint, int64_t island_devices) {
  validate(opts);
  validate_island_devices(island_devices, opts.world_size);
  RendezvousStores stores = connect_stores(opts);
  start_up_checks(stores, opts, fingerprint);
  return std::make_unique<GlooDistGroup>(std::move(stores), opts.rank, opts.world_size, opts, ledger_algo,
                                         island_devices, /*prove=*/true);
}

std::vector<std::unique_ptr<DistGroup>> gloo_threads_group(int64_t n, double timeout_s, CollectiveAlgo ledger_algo,
                                                           int64_t island_devices) {
  validate_island_devices(island_devices, n);
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(to_ms(timeout_s));
  std::vector<std::unique_ptr<DistGroup>> groups(n);
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        DistOptions o;
        o.rank = r;
        o.world_size = n;
        o.timeout_s = timeout_s;
        groups[r] = std::make_unique<GlooDistGroup>(RendezvousStores{nullptr, store, c10::intrusive_ptr<c10d::Store>()},
                                                    r, n, o, ledger_algo, island_devices, /*prove=*/false);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return groups;
}

}  // namespace atl
