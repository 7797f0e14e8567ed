#include "net/island_exchanges.h"

#include <stdexcept>

namespace atl {

const std::vector<IslandExchangeInfo>& island_exchanges() {
  static const std::vector<IslandExchangeInfo> table = {
      {IslandExchange::Flat, "flat", "one ring of every device over the wide-area links"},
      {IslandExchange::Leader, "leader",
       "reduced in the island, the island leaders run the op across (1-to-N), broadcast in the island"},
      {IslandExchange::Sharded, "sharded",
       "reduce-scattered in the island, each device carries its 1/D over its own wide-area link, "
       "all-gathered in the island"},
  };
  return table;
}

std::vector<std::string> island_exchange_names() {
  std::vector<std::string> out;
  for (const IslandExchangeInfo& x : island_exchanges()) out.push_back(x.name);
  return out;
}

std::string island_exchange_choices() {
  std::string out;
  for (const IslandExchangeInfo& x : island_exchanges()) out += (out.empty() ? "" : " | ") + std::string(x.name);
  return out;
}

std::string island_exchange_help() {
  std::string out;
  for (const IslandExchangeInfo& x : island_exchanges())
    out += (out.empty() ? "" : "; ") + std::string(x.name) + ": " + x.help;
  return out;
}

IslandExchange parse_exchange(const std::string& name) {
  for (const IslandExchangeInfo& x : island_exchanges())
    if (name == x.name) return x.exchange;
  throw std::invalid_argument("islands.exchange '" + name + "': expected one of " + island_exchange_choices());
}

std::string to_string(IslandExchange exchange) {
  for (const IslandExchangeInfo& x : island_exchanges())
    if (x.exchange == exchange) return x.name;
  // An enum value without a line is a mistake in the table (NetExchanges tests every value).
  throw std::logic_error("island exchange " + std::to_string(static_cast<int>(exchange)) + " has no table line");
}

}  // namespace atl
