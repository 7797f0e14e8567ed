// The two-level network of islands built from [network] and [islands]
// (see atoll/net.h). The wide-area model reuses NetworkModel::from_config
// with the per-island lists in place of the per-worker ones, so units,
// list syntax and lengths are checked by the same code.
#include <stdexcept>
#include <string>

#include "atoll/net.h"
#include "util/rng.h"

namespace atl {
namespace {

// from_config names the per-worker keys; here they were the per-island ones.
std::string as_island_message(std::string what) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"network.worker_", "network.island_"},
                                 {" workers;", " islands;"},
                                 {"one per worker", "one per island"}}) {
    for (size_t at = what.find(from); at != std::string::npos; at = what.find(from, at + to.size()))
      what.replace(at, from.size(), to);
  }
  return what;
}

}  // namespace

NetworkModel wan_network(const Config& cfg, uint64_t seed) {
  NetworkConfig wan = cfg.network;
  wan.worker_bandwidth = cfg.network.island_bandwidth;
  wan.worker_latency = cfg.network.island_latency;
  wan.worker_download_bandwidth = cfg.network.island_download_bandwidth;
  wan.outages = "";  // per-worker; refused with islands (validate_islands)
  try {
    return NetworkModel::from_config(wan, island_layout(cfg).islands, seed);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(as_island_message(e.what()));
  }
}

NetworkModel intra_network(const Config& cfg, uint64_t seed) {
  NetworkConfig in;
  in.bandwidth = cfg.network.intra_bandwidth;
  in.latency = cfg.network.intra_latency;
  in.algorithm = to_string(CollectiveAlgo::Ring);
  in.jitter = "0ms";
  try {
    // Its own jitter stream would differ from the wide-area one; it has none.
    return NetworkModel::from_config(in, island_layout(cfg).devices, mix_seed(seed, 0x15a1d, 0));
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"network.bandwidth", "network.intra_bandwidth"},
                                   {"network.latency", "network.intra_latency"}}) {
      const size_t at = what.find(from);
      if (at != std::string::npos) what.replace(at, from.size(), to);
    }
    throw std::invalid_argument(what);
  }
}

IslandNetwork island_network(const Config& cfg, uint64_t seed) {
  const NetworkModel in = intra_network(cfg, seed);
  return IslandNetwork(wan_network(cfg, seed), in.link(0), island_layout(cfg).devices,
                       parse_exchange(cfg.islands.exchange), cfg.network.island_uplink == "shared");
}

}  // namespace atl
