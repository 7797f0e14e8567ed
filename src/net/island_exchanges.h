// The island exchange table: one line per way a cross-island payload travels
// (islands.exchange; ALGORITHMS.md 7.2, docs/ISLANDS.md) with its name and
// help line. parse_exchange(), to_string(), [islands]' check, `--help` and
// `atoll cost` read it; the exchange's charge is IslandNetwork::charge's case
// for its enum value (islands.cpp) and its data path the communicator's
// (island_all_reduce). Torch-free (config and the fuzz build link it).
#pragma once

#include <string>
#include <vector>

#include "atoll/net.h"

namespace atl {

struct IslandExchangeInfo {
  IslandExchange exchange;
  const char* name;  // islands.exchange's value; to_string()
  const char* help;  // how the payload travels (one line, --help)
};

// Every exchange, in the order help, errors and `atoll cost` list them.
const std::vector<IslandExchangeInfo>& island_exchanges();
// The names, in table order.
std::vector<std::string> island_exchange_names();
// "flat: one ring ...; leader: ...; sharded: ...": each name with its help line.
// (island_exchange_choices(), the names alone, is in atoll/net.h.)
std::string island_exchange_help();

}  // namespace atl
