// The rendezvous of a real run (see gloo_rendezvous.h).
#include "comm/gloo_rendezvous.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <stdexcept>
#include <vector>

#include "atoll/config.h"

namespace atl {
namespace {

c10::intrusive_ptr<c10d::Store> tcp_store(const DistOptions& opts, bool server) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(opts.master_port);
  so.isServer = server;
  so.numWorkers = c10::nullopt;
  so.waitWorkers = false;  // start-up checks wait for the ranks, with better errors
  so.timeout = to_ms(opts.timeout_s);
  return c10::make_intrusive<c10d::TCPStore>(opts.master_addr, so);
}

}  // namespace

std::chrono::milliseconds to_ms(double seconds) {
  // validate() bounds the timeout and the heartbeat; this keeps the cast to
  // int64 defined whatever a caller passes (NaN and inf fail the test).
  if (!(seconds >= 0 && seconds <= 1e9))
    throw std::invalid_argument("a duration of " + std::to_string(seconds) + " s is not in 0..1e9 s");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

std::string store_string(c10d::Store& store, const std::string& key) {
  const std::vector<uint8_t> v = store.get(key);
  return std::string(v.begin(), v.end());
}

RendezvousStores connect_stores(const DistOptions& opts) {
  const std::string where = opts.master_addr + ":" + std::to_string(opts.master_port);
  try {
    RendezvousStores s;
    s.store = tcp_store(opts, opts.rank == 0);
    s.beat_store = tcp_store(opts, false);
    return s;
  } catch (const std::exception& e) {
    if (opts.rank == 0)
      throw std::runtime_error("rank 0 cannot host the rendezvous store at " + where + ": " + e.what() +
                               " (is MASTER_PORT in use by another job? pick another port)");
    throw std::runtime_error("rank " + std::to_string(opts.rank) + " cannot reach rank 0's rendezvous store at " +
                             where + " within " + std::to_string(int(opts.timeout_s)) + " s: " + e.what() +
                             " (is rank 0 running? check MASTER_ADDR, MASTER_PORT and firewalls)");
  }
}

void start_up_checks(c10d::Store& store, const DistOptions& o, const std::string& fingerprint) {
  auto put = [&](const std::string& k, const std::string& v) {
    store.set(k, std::vector<uint8_t>(v.begin(), v.end()));
  };
  auto get = [&](const std::string& k, const std::string& who) {
    try {
      return store_string(store, k);
    } catch (const std::exception& e) {
      throw std::runtime_error("rank " + std::to_string(o.rank) + " waited " + std::to_string(int(o.timeout_s)) +
                               " s for " + who + " and gave up (" + e.what() + ")");
    }
  };
  const std::string mine = "dist.world_size = " + std::to_string(o.world_size) + "\n" + fingerprint;
  if (o.rank == 0) {
    put("atoll/hello", mine);
    std::string verdict = "ok";
    for (int64_t r = 1; r < o.world_size && verdict == "ok"; ++r) {
      const std::string v = get("atoll/check/" + std::to_string(r),
                                "rank " + std::to_string(r) + " to join (is it started, with the same MASTER_ADDR and "
                                "MASTER_PORT?)");
      if (v != "ok") verdict = v;
    }
    put("atoll/verdict", verdict);
    if (verdict != "ok") throw std::runtime_error("refusing to start: " + verdict);
    return;
  }
  const std::string theirs = get("atoll/hello", "rank 0's start-up message (is rank 0 running at " + o.master_addr +
                                                    ":" + std::to_string(o.master_port) + "?)");
  std::string check = "ok";
  if (theirs != mine) {
    const FlatConfig a = parse_flat_lines(mine), b = parse_flat_lines(theirs);
    check = (a == b ? std::string("the resolved configs differ")
                    : describe_difference(a, b, "on rank " + std::to_string(o.rank), "on rank 0")) +
            " (every rank must run with the same config, flags and WORLD_SIZE)";
  }
  put("atoll/check/" + std::to_string(o.rank), check);
  if (check != "ok") throw std::runtime_error("refusing to start: " + check);
  const std::string verdict = get("atoll/verdict", "rank 0's verdict on the start-up checks");
  if (verdict != "ok") throw std::runtime_error("rank 0 refused to start: " + verdict);
}

}  // namespace atl
