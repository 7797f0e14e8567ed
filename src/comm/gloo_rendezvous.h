// Rendezvous of a real run's ranks (private to the Gloo backend): the
// TCPStore rank 0 hosts, and the start-up checks every rank passes before
// any Gloo connection is made.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

#include "atoll/dist.h"

namespace atl {

std::chrono::milliseconds to_ms(double seconds);
// The value under `key`, as text (blocks until it is set or the store times out).
std::string store_string(c10d::Store& store, const std::string& key);

struct RendezvousStores {
  c10::intrusive_ptr<c10d::Store> store;       // the group's rendezvous and the start-up checks
  c10::intrusive_ptr<c10d::Store> beat_store;  // a second connection, for the heartbeat thread
};
// Connects to (rank 0: hosts) the TCPStore at MASTER_ADDR:MASTER_PORT.
// Throws saying what to check (port in use, rank 0 not running, firewalls).
RendezvousStores connect_stores(const DistOptions& opts);

// Every rank compares its world size and resolved config (`fingerprint`)
// with rank 0's, so a mismatch is refused at start-up with the differing
// keys instead of hanging in the group's connect or diverging.
void start_up_checks(c10d::Store& store, const DistOptions& opts, const std::string& fingerprint);

}  // namespace atl
