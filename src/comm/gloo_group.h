// Test support for the Gloo backend (not part of the public API).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "atoll/dist.h"

namespace atl {

// n Gloo ranks in this process over one in-memory store, for tests: element
// r must be used from its own thread (construction connects all ranks, so
// this spawns the threads itself). No start-up checks, no heartbeat.
// `island_devices` > 1: each rank also has its island and cross groups, as
// connect_gloo makes them (same validation).
std::vector<std::unique_ptr<DistGroup>> gloo_threads_group(int64_t n, double timeout_s, CollectiveAlgo ledger_algo,
                                                           int64_t island_devices = 1);

}  // namespace atl
