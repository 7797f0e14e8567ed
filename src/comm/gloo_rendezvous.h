// Rendezvous of a real run's ranks (private to the Gloo backend): the
// authenticated store rank 0 hosts (auth_store.h), the start-up checks every
// rank passes before any Gloo connection is made, and the proof that every
// Gloo connection leads to a holder of the job token.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "atoll/dist.h"
#include "util/crypto.h"

namespace atl {

class AuthStoreServer;

std::chrono::milliseconds to_ms(double seconds);
// The value under `key`, as text (blocks until it is set or the store times out).
std::string store_string(c10d::Store& store, const std::string& key);

struct RendezvousStores {
  std::shared_ptr<AuthStoreServer> server;     // rank 0 only: serves the others
  c10::intrusive_ptr<c10d::Store> store;       // the group's rendezvous and the start-up checks
  c10::intrusive_ptr<c10d::Store> beat_store;  // a second connection, for the heartbeat thread
};
// Rank 0 hosts the store on MASTER_ADDR:MASTER_PORT; every rank connects to
// it and proves the job token. Throws saying what to check (port in use,
// rank 0 not running, firewalls, different tokens).
RendezvousStores connect_stores(const DistOptions& opts);

// Every rank compares its world size and resolved config (`fingerprint`,
// flat "key = value" lines) with rank 0's, so a mismatch is refused at
// start-up with the differing keys instead of hanging in the group's connect
// or diverging. Only keyed fingerprints of the values cross the network
// (and, on a mismatch, the differing keys' values). Rank 0 also refuses to
// start when a process proved another job token (`server`), and leaves a
// fresh nonce for prove_gloo_connections.
void start_up_checks(const RendezvousStores& stores, const DistOptions& opts, const std::string& fingerprint);

// Gloo's pair sockets admit whoever connects first. After a group connects,
// every rank all-gathers gloo_proof(token, nonce, its rank in the group) over
// the group's own connections and checks everyone's with check_gloo_proofs,
// so a connection won by a stranger is refused, naming the rank whose proof
// failed. The nonce is rank 0's, from the store (start_up_checks).
std::string gloo_proof_nonce(c10d::Store& store);
Bytes gloo_proof(const Bytes& job_token, const std::string& nonce, const std::string& group, int64_t rank);
// Throws "<where>: the Gloo connection to rank R did not prove the job token
// ..." for the first rank whose proof in `gathered` is wrong.
void check_gloo_proofs(const std::vector<Bytes>& gathered, const Bytes& job_token, const std::string& nonce,
                       const std::string& group, const std::string& where);

}  // namespace atl
