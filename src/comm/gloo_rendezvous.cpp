// The rendezvous of a real run (see gloo_rendezvous.h).
#include "comm/gloo_rendezvous.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "atoll/config.h"
#include "comm/auth_store.h"
#include "comm/job_token.h"

namespace atl {
namespace {

constexpr const char* kHelloKey = "atoll/hello";
constexpr const char* kVerdictKey = "atoll/verdict";
constexpr const char* kNonceKey = "atoll/nonce";
std::string check_key(int64_t r) { return "atoll/check/" + std::to_string(r); }

// The config as "key = <keyed fingerprint>" lines: equal values give equal
// lines, and a reader of the store learns the keys but not the values.
FlatConfig keyed_fingerprints(const FlatConfig& flat, const Bytes& token) {
  FlatConfig out;
  for (const auto& [k, v] : flat) {
    Bytes mac = hmac_sha256(token, {"atoll config", k, "=", v});
    mac.resize(16);
    out[k] = to_hex(mac);
  }
  return out;
}

void put(c10d::Store& store, const std::string& k, const std::string& v) {
  store.set(k, std::vector<uint8_t>(v.begin(), v.end()));
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
  if (opts.job_token.empty() && !is_loopback_address(opts.master_addr))
    std::fprintf(stderr,
                 "atoll: WARNING: --insecure: no job token, so anyone who can reach %s can join this job, read "
                 "its rendezvous and stop it (see docs/SECURITY.md)\n",
                 where.c_str());
  RendezvousStores s;
  if (opts.rank == 0) {
    try {
      AuthStoreLimits limits;
      limits.max_clients = size_t(4 * opts.world_size + 16);  // two per rank, and restarts
      s.server = std::make_shared<AuthStoreServer>(opts.master_addr, opts.master_port, opts.job_token, limits);
    } catch (const std::exception& e) {
      throw std::runtime_error("rank 0 cannot host the rendezvous store: " + std::string(e.what()));
    }
  }
  try {
    s.store =
        c10::make_intrusive<AuthStoreClient>(opts.master_addr, opts.master_port, opts.job_token, to_ms(opts.timeout_s));
    s.beat_store =
        c10::make_intrusive<AuthStoreClient>(opts.master_addr, opts.master_port, opts.job_token, to_ms(opts.timeout_s));
  } catch (const std::exception& e) {
    const bool about_token = std::string(e.what()).find("job token") != std::string::npos;
    throw std::runtime_error(
        "rank " + std::to_string(opts.rank) + " cannot join the rendezvous: " + e.what() +
        (opts.rank == 0 || about_token ? "" : " (is rank 0 running? check MASTER_ADDR, MASTER_PORT and firewalls)"));
  }
  return s;
}

void start_up_checks(const RendezvousStores& stores, const DistOptions& o, const std::string& fingerprint) {
  c10d::Store& store = *stores.store;
  const std::string me = "rank " + std::to_string(o.rank);
  FlatConfig mine = parse_flat_lines(fingerprint);
  mine["dist.world_size"] = std::to_string(o.world_size);
  const std::string token_hint = " (is ATOLL_JOB_TOKEN_FILE, or ATOLL_JOB_TOKEN, the same on every host?)";
  auto get = [&](const std::string& k, const std::string& who) {
    try {
      return store_string(store, k);
    } catch (const std::exception& e) {
      throw std::runtime_error(me + " waited " + std::to_string(int(o.timeout_s)) + " s for " + who + " and gave up (" +
                               e.what() + ")");
    }
  };
  if (o.rank == 0) {
    put(store, kNonceKey, to_hex(random_bytes(32)));
    put(store, kHelloKey, flat_lines(keyed_fingerprints(mine, o.job_token)));
    std::string verdict = "ok";
    const auto deadline = std::chrono::steady_clock::now() + to_ms(o.timeout_s);
    for (int64_t r = 1; r < o.world_size && verdict == "ok"; ++r) {
      // Polled, so that a process with another token stops the start at once
      // rather than after the timeout.
      while (!store.check({check_key(r)})) {
        if (stores.server && stores.server->stats().token_refusals > 0) {
          verdict = stores.server->stats().last_refusal + token_hint;
          break;
        }
        if (std::chrono::steady_clock::now() > deadline)
          throw std::runtime_error(me + " waited " + std::to_string(int(o.timeout_s)) + " s for rank " +
                                   std::to_string(r) +
                                   " to join and gave up (is it started, with the same MASTER_ADDR, MASTER_PORT "
                                   "and job token?)");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (verdict != "ok") break;
      const std::string theirs = store_string(store, check_key(r));
      if (theirs == "ok") continue;
      // Rank r's values of the keys whose fingerprints differ from ours.
      const FlatConfig a = parse_flat_lines(theirs);
      FlatConfig b;
      for (const auto& [k, v] : a)
        if (const auto it = mine.find(k); it != mine.end()) b[k] = it->second;
      FlatConfig a_present;
      for (const auto& [k, v] : a)
        if (v != "(absent)") a_present[k] = v;
      verdict = describe_difference(a_present, b, "on rank " + std::to_string(r), "on rank 0") +
                " (every rank must run with the same config, flags and WORLD_SIZE)";
    }
    put(store, kVerdictKey, verdict);
    if (verdict != "ok") throw std::runtime_error("refusing to start: " + verdict);
    return;
  }
  const FlatConfig theirs =
      parse_flat_lines(get(kHelloKey, "rank 0's start-up message (is rank 0 running at " + o.master_addr + ":" +
                                          std::to_string(o.master_port) + "?)"));
  const FlatConfig my_prints = keyed_fingerprints(mine, o.job_token);
  FlatConfig differing;  // my values of the keys that differ, "(absent)" for the ones I lack
  for (const auto& [k, v] : my_prints) {
    const auto it = theirs.find(k);
    if (it == theirs.end() || it->second != v) differing[k] = mine.at(k);
  }
  for (const auto& [k, v] : theirs)
    if (my_prints.count(k) == 0) differing[k] = "(absent)";
  put(store, check_key(o.rank), differing.empty() ? "ok" : flat_lines(differing));
  const std::string verdict = get(kVerdictKey, "rank 0's verdict on the start-up checks");
  if (verdict != "ok")
    throw std::runtime_error((differing.empty() ? "rank 0 refused to start: " : "refusing to start: ") + verdict);
}

std::string gloo_proof_nonce(c10d::Store& store) { return store_string(store, kNonceKey); }

Bytes gloo_proof(const Bytes& job_token, const std::string& nonce, const std::string& group, int64_t rank) {
  return hmac_sha256(job_token, {"atoll gloo connection", nonce, group, std::to_string(rank)});
}

void check_gloo_proofs(const std::vector<Bytes>& gathered, const Bytes& job_token, const std::string& nonce,
                       const std::string& group, const std::string& where) {
  for (size_t r = 0; r < gathered.size(); ++r)
    if (!equal_in_constant_time(gathered[r], gloo_proof(job_token, nonce, group, int64_t(r))))
      throw std::runtime_error(where + ": the Gloo connection to rank " + std::to_string(r) + " of " + group +
                               " did not prove the job token: a process that is not that rank answered on it "
                               "(a stranger that connected first?); refusing to go on");
}

}  // namespace atl
