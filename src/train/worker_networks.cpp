#include "train/worker_networks.h"

namespace atl {

WorkerNetworks::WorkerNetworks(const Config& cfg)
    : flat(NetworkModel::from_config(cfg.network, cfg.strategy.workers, static_cast<uint64_t>(cfg.run.seed))),
      layout(island_layout(cfg)) {
  if (layout.devices > 1) {
    const uint64_t seed = static_cast<uint64_t>(cfg.run.seed);
    islands = std::make_unique<IslandNetwork>(island_network(cfg, seed));
    intra = std::make_unique<NetworkModel>(intra_network(cfg, seed));
  }
}

void WorkerNetworks::attach(int64_t rank, Communicator& comm, Communicator* island_comm, VirtualClock& clock) const {
  if (island_comm == nullptr) {
    comm.attach_clock(&clock, &flat);
    return;
  }
  island_comm->attach_clock(&clock, intra.get());
  comm.attach_clock(&clock, &islands->wan());
  comm.attach_islands(islands.get(), rank % layout.devices, island_comm);
}

}  // namespace atl
