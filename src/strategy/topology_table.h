// The topologies strategy.topology names, one line each (topology_table.cpp):
// parse_topology(), validate_strategy() and --help read it. Torch-free (the
// config fuzzer links it); the mixing itself is topology.cpp's.
#pragma once

#include <string>
#include <vector>

namespace atl {

enum class Topology { Global, Ring, Gossip };

struct TopologyInfo {
  const char* name;  // strategy.topology
  Topology value;
  const char* help;  // one line for --help
};

// Every topology, in the order help and errors list them.
const std::vector<TopologyInfo>& topology_table();
// The names alone, for enum checks and messages.
std::vector<std::string> topology_names();
// "global" | "ring" | "gossip"; throws std::invalid_argument naming the choices.
Topology parse_topology(const std::string& name);

}  // namespace atl
