// The net area's two tables: collective algorithms (network.algorithm,
// src/net/collective_algorithms.h) and island exchanges (islands.exchange,
// src/net/island_exchanges.h). Every line reaches parsing, to_string(),
// validation, `--help`, `atoll cost` and the network model; a line added
// to either table is covered here the day it lands.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/cost.h"
#include "atoll/net.h"
#include "atoll/setup.h"
#include "net/collective_algorithms.h"
#include "net/island_exchanges.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::invalid_argument_message;

// "a | b | c", as validation lists allowed values.
std::string joined_by_bars(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " | ") + v;
  return out;
}

// ------------------------------------------------- collective algorithms

TEST(NetAlgorithms, EveryNameAndAliasParsesToItsLineAndPrintsAsTheName) {
  std::set<std::string> spellings;
  std::set<int> algos;
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    EXPECT_TRUE(algos.insert(static_cast<int>(a.algo)).second) << a.name << ": two lines for one enum value";
    EXPECT_EQ(parse_algorithm(a.name), a.algo) << a.name;
    EXPECT_EQ(to_string(a.algo), a.name);
    EXPECT_EQ(&collective_algorithm(a.algo), &a);
    EXPECT_TRUE(spellings.insert(a.name).second) << a.name;
    for (const std::string& alias : a.aliases) {
      EXPECT_EQ(parse_algorithm(alias), a.algo) << alias;
      EXPECT_TRUE(spellings.insert(alias).second) << alias;
    }
  }
  const auto listed = collective_algorithm_spellings();
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), spellings);
  const std::string msg = invalid_argument_message([] { parse_algorithm("butterfly"); });
  EXPECT_NE(msg.find("'butterfly'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(collective_algorithm_choices()), std::string::npos) << msg;
}

TEST(NetAlgorithms, ValidationAcceptsEverySpellingAndHelpNamesEachWithItsHelpLine) {
  for (const std::string& spelling : collective_algorithm_spellings()) {
    Config c;
    c.network.algorithm = spelling;
    EXPECT_TRUE(validate(c).empty()) << spelling;
  }
  Config c;
  c.network.algorithm = "butterfly";
  std::string refusal;
  for (const std::string& e : validate(c))
    if (e.rfind("network.algorithm = 'butterfly'", 0) == 0) refusal = e;
  EXPECT_NE(refusal.find("allowed values are " + joined_by_bars(collective_algorithm_spellings())), std::string::npos)
      << refusal;
  const std::string help = field_help("network.algorithm");
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    EXPECT_NE(help.find(std::string(a.name) + ": " + a.help), std::string::npos) << help;
    for (const std::string& alias : a.aliases) EXPECT_NE(help.find(alias), std::string::npos) << help;
  }
}

// The table's formulas are what the network model charges: an all-reduce's
// time and bytes from the line, every other op's from the shared formulas.
TEST(NetAlgorithms, TheNetworkModelChargesEachLinesAllReduceAndAllGatherFormulas) {
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    // Uploads 2e6, 1e6, 4e6; downloads 3e6, 5e6, 0.8e6: the slowest uplink
    // is 1e6, the slowest downlink 0.8e6.
    const NetworkModel net({{2e6, 0.01, 3e6}, {1e6, 0.03, 5e6}, {4e6, 0.02, 0.8e6}}, a.algo, 3e6, 0.0, 1);
    AllReduceShape shape;
    shape.n = 3;
    shape.payload = 5e5;
    shape.alpha = 0.03;
    shape.beta = 0.8e6;
    shape.up = 1e6;
    shape.down = 0.8e6;
    shape.server_bandwidth = 3e6;
    EXPECT_EQ(net.collective_seconds(CommOp::AllReduce, 5e5, 0), a.all_reduce_seconds(shape)) << a.name;
    EXPECT_EQ(net.collective_seconds(CommOp::AllGather, 5e5, 0), a.all_gather_seconds(shape)) << a.name;
    EXPECT_GT(a.all_reduce_seconds(shape), 0) << a.name;
    EXPECT_GT(a.all_gather_seconds(shape), 0) << a.name;
    const ByteCount want = a.all_reduce_bytes(3.0, 5e5), got = bytes_for(CommOp::AllReduce, a.algo, 5e5, 3, false);
    EXPECT_EQ(got.sent, want.sent) << a.name;
    EXPECT_EQ(got.received, want.received) << a.name;
    EXPECT_GT(got.sent, 0) << a.name;
    const ByteCount gather = bytes_for(CommOp::AllGather, a.algo, 5e5, 3, false);
    EXPECT_EQ(gather.sent, a.all_gather_bytes(3.0, 5e5).sent) << a.name;
    EXPECT_EQ(gather.received, 2 * 5e5) << a.name;  // the others' payloads, whatever the algorithm
    // `atoll cost --algorithm=<name>` runs on it.
    CostQuery q;
    q.algo = parse_algorithm(a.name);
    EXPECT_EQ(estimate_cost(q).sync_bytes_sent, bytes_for(CommOp::AllReduce, a.algo, q.params * 2, 8, false).sent)
        << a.name;
  }
}

// ----------------------------------------------------- island exchanges

TEST(NetExchanges, EveryNameParsesToItsLineAndPrintsAsTheName) {
  std::set<std::string> names;
  std::set<int> exchanges;
  for (const IslandExchangeInfo& x : island_exchanges()) {
    EXPECT_TRUE(exchanges.insert(static_cast<int>(x.exchange)).second) << x.name;
    EXPECT_TRUE(names.insert(x.name).second) << x.name;
    EXPECT_EQ(parse_exchange(x.name), x.exchange);
    EXPECT_EQ(to_string(x.exchange), x.name);
    EXPECT_NE(island_exchange_choices().find(x.name), std::string::npos);
  }
  const std::string msg = invalid_argument_message([] { parse_exchange("mesh"); });
  EXPECT_NE(msg.find(island_exchange_choices()), std::string::npos) << msg;
}

// `atoll cost`'s single-level figures and the islands tests take the first
// exchange as flat, the reference every other one is compared with.
TEST(NetExchanges, TheFirstExchangeIsFlat) {
  ASSERT_FALSE(island_exchanges().empty());
  EXPECT_EQ(island_exchanges().front().exchange, IslandExchange::Flat);
}

TEST(NetExchanges, ValidationAcceptsEveryNameAndHelpNamesEachWithItsHelpLine) {
  for (const std::string& name : island_exchange_names()) {
    Config c;
    c.strategy.name = "diloco";
    c.strategy.workers = 4;
    c.islands.devices = 2;
    c.islands.exchange = name;
    EXPECT_TRUE(validate(c).empty()) << name;
  }
  Config c;
  c.islands.exchange = "mesh";
  std::string refusal;
  for (const std::string& e : validate(c))
    if (e.rfind("islands.exchange = 'mesh'", 0) == 0) refusal = e;
  EXPECT_NE(refusal.find("allowed values are " + island_exchange_choices()), std::string::npos) << refusal;
  const std::string help = field_help("islands.exchange");
  for (const IslandExchangeInfo& x : island_exchanges())
    EXPECT_NE(help.find(std::string(x.name) + ": " + x.help), std::string::npos) << help;
}

// docs/ISLANDS.md, the user's page on islands, gives every exchange's
// figures for its worked example: a row of its table per exchange.
TEST(NetExchanges, DocsIslandsHasARowForEveryExchange) {
  const std::string doc = testing::read_text(std::string(ATOLL_SOURCE_DIR) + "/docs/ISLANDS.md");
  for (const IslandExchangeInfo& x : island_exchanges())
    EXPECT_NE(doc.find("\n| " + std::string(x.name) + " "), std::string::npos)
        << "docs/ISLANDS.md has no row for the '" << x.name << "' exchange (run atoll cost --islands for its figures)";
}

TEST(NetExchanges, AtollCostHasOneRowPerExchangeInTableOrderAndAcceptsEachName) {
  CostQuery q;
  q.islands = 4;
  q.devices = 2;
  q.strategy = "diloco";
  const CostReport all = estimate_cost(q);
  ASSERT_EQ(all.exchanges.size(), island_exchanges().size());
  const std::string text = format_cost(q, all);
  for (size_t i = 0; i < all.exchanges.size(); ++i) {
    const std::string name = island_exchanges()[i].name;
    EXPECT_EQ(all.exchanges[i].name, name);
    EXPECT_TRUE(all.exchanges[i].chosen) << name;
    EXPECT_GT(all.exchanges[i].sync_seconds, 0) << name;
    EXPECT_NE(text.find("  " + name + ": "), std::string::npos) << text;  // its note under the table
    q.exchange = name;
    const CostReport one = estimate_cost(q);
    for (size_t j = 0; j < one.exchanges.size(); ++j) EXPECT_EQ(one.exchanges[j].chosen, i == j) << name;
  }
}

}  // namespace
}  // namespace atl
