// The simulated links a worker's communicators are charged on, built once
// from [network] and [islands]: the flat network of every worker, or the
// islands' two-level one. Training and atoll retime attach them the same way,
// so a replayed clock is the clock a run on that network would have had.
#pragma once

#include <cstdint>
#include <memory>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "atoll/net.h"

namespace atl {

struct WorkerNetworks {
  explicit WorkerNetworks(const Config& cfg);
  NetworkModel flat;  // every worker's link (no islands)
  IslandLayout layout;
  std::unique_ptr<IslandNetwork> islands;  // islands.devices > 1: the two-level network
  std::unique_ptr<NetworkModel> intra;     // and the links inside an island
  // Attaches worker `rank`'s clock and links to its communicators: with
  // islands, `island_comm` to the intra links and `comm` to the wide-area
  // ones under the exchange pattern; else `comm` to the flat network.
  void attach(int64_t rank, Communicator& comm, Communicator* island_comm, VirtualClock& clock) const;
};

}  // namespace atl
