#include "strategy/topology_table.h"

#include <stdexcept>

namespace atl {

const std::vector<TopologyInfo>& topology_table() {
  static const std::vector<TopologyInfo> table = {
      {"global", Topology::Global, "every worker averages with every other (an all-reduce)"},
      {"ring", Topology::Ring, "each worker mixes with its two neighbours, weights 1/3"},
      {"gossip", Topology::Gossip, "random groups of noloco.group_size, drawn afresh at every exchange"},
  };
  return table;
}

std::vector<std::string> topology_names() {
  std::vector<std::string> names;
  for (const TopologyInfo& t : topology_table()) names.push_back(t.name);
  return names;
}

Topology parse_topology(const std::string& name) {
  std::string choices;
  for (const TopologyInfo& t : topology_table()) {
    if (name == t.name) return t.value;
    choices += (choices.empty() ? "" : " | ") + std::string(t.name);
  }
  throw std::invalid_argument("topology '" + name + "': allowed values are " + choices);
}

}  // namespace atl
