// The strategy table (strategy/table.h): every line names real config keys,
// builds its method, and reaches validate(), make_strategy() and --help;
// every method has what the project requires of one (a golden trajectory),
// and every suite's exclusion list (every_strategy.h) names real methods.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "atoll/comm.h"
#include "atoll/setup.h"
#include "atoll/strategy.h"
#include "config/checks.h"
#include "every_strategy.h"
#include "strategy/table.h"
#include "strategy/topology_table.h"

namespace atl {
namespace {

TEST(StrategyTable, NamesAreUniqueAndListedInTheOrderOfTheTable) {
  std::set<std::string> seen;
  std::string joined;
  for (const Method& m : strategy_table()) {
    EXPECT_TRUE(seen.insert(m.name).second) << m.name;
    EXPECT_EQ(find_method(m.name), &m);
    joined += (joined.empty() ? "" : " | ") + std::string(m.name);
  }
  EXPECT_EQ(strategy_choices(), joined);
  EXPECT_EQ(find_method("nope"), nullptr);
}

TEST(StrategyTable, EveryKeyOfTheTableNamesAConfigFieldOfItsType) {
  // validate() and method_warmup_steps() throw std::logic_error on a key
  // that names no field (a mistake in the table), whatever the method.
  for (const Method& m : strategy_table()) {
    Config c;
    c.strategy.name = m.name;
    EXPECT_NO_THROW(validate(c)) << m.name;
    EXPECT_NO_THROW(method_warmup_steps(c)) << m.name;
  }
  Config c;
  c.strategy.name = "palsgd";
  c.palsgd.ddp_warmup_steps = 7;
  c.diloco.ddp_warmup_steps = 3;
  EXPECT_EQ(method_warmup_steps(c), 7);
  c.strategy.name = "diloco";
  EXPECT_EQ(method_warmup_steps(c), 3);
}

TEST(StrategyTable, WhatEveryMethodReadsNamesAMethodSectionOrAKeyOfOne) {
  Config c;
  std::set<std::string> keys, sections;
  visit_fields(c, [&](FieldRef& f) {
    keys.insert(f.name);
    sections.insert(f.name.substr(0, f.name.find('.')));
  });
  for (const Method& m : strategy_table())
    for (const std::string& word : m.reads)
      EXPECT_TRUE(word.find('.') == std::string::npos ? sections.count(word) > 0 : keys.count(word) > 0)
          << m.name << " reads '" << word << "', which is no config section or key";
  // The per-method sections, and only they: overrides of the shared ones
  // ([train], [codec], [faults], ...) are never refused.
  const std::vector<std::string> got = method_sections();
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()),
            (std::set<std::string>{"ddp", "diloco", "sparta", "palsgd", "demo", "sparseloco", "desloc", "streaming",
                                   "noloco"}));
}

TEST(StrategyTable, EveryMethodReadsItsCodecAndWarmupKeysAndAWarmupTheGradientAllReduceKeys) {
  for (const Method& m : strategy_table()) {
    for (const std::string& key : m.codec_keys) EXPECT_TRUE(method_reads(m, key)) << m.name << ": " << key;
    if (m.warmup_key == nullptr) continue;
    EXPECT_TRUE(method_reads(m, m.warmup_key)) << m.name << ": " << m.warmup_key;
    for (const std::string& key : gradient_allreduce_keys()) EXPECT_TRUE(method_reads(m, key)) << m.name << ": " << key;
  }
}

TEST(StrategyTable, TheDiLoCoFamilyNamesItsWarmupKeyAndNullptrMeansNoWarmup) {
  // Every method that reads [diloco]'s outer step has its warm-up
  // (strategy/ddp_warmup.h); a method without a key has none, whatever
  // diloco.ddp_warmup_steps says (fault windows may then start at step 0).
  Config c;
  c.diloco.ddp_warmup_steps = 3;
  c.palsgd.ddp_warmup_steps = 7;
  const std::map<std::string, int64_t> want = {
      {"diloco", 3}, {"sparta_diloco", 3}, {"sparseloco", 3}, {"streaming", 3}, {"palsgd", 7}};
  for (const Method& m : strategy_table()) {
    c.strategy.name = m.name;
    const auto it = want.find(m.name);
    EXPECT_EQ(m.warmup_key != nullptr, it != want.end()) << m.name;
    EXPECT_EQ(method_warmup_steps(c), it == want.end() ? 0 : it->second) << m.name;
  }
}

TEST(StrategyTable, MakeStrategyBuildsEveryMethodAndNamesThemForAnUnknownOne) {
  InProcessGroup group(1);
  for (const Method& m : strategy_table()) {
    Config c;
    c.strategy.name = m.name;
    c.strategy.workers = 1;
    std::vector<at::Tensor> params = {at::zeros({3, 4}).requires_grad_(), at::zeros({4}).requires_grad_()};
    EXPECT_NE(make_strategy(c, params, group.rank(0)), nullptr) << m.name;
  }
  Config c;
  c.strategy.name = "nope";
  try {
    make_strategy(c, {at::zeros({2})}, group.rank(0));
    FAIL() << "an unknown strategy was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(strategy_choices()), std::string::npos) << e.what();
  }
}

TEST(StrategyTable, OneWorkerTraitIsWhatValidationEnforces) {
  for (const Method& m : strategy_table()) {
    Config c;
    c.strategy.name = m.name;
    c.strategy.workers = 2;
    const auto errors = validate(c);
    bool refused = false;
    for (const std::string& e : errors)
      refused = refused || e == "strategy.name = '" + std::string(m.name) +
                                    "' trains one worker: set strategy.workers = 1 or pick another strategy";
    EXPECT_EQ(refused, bool(m.traits & kOneWorker)) << m.name;
    if (!(m.traits & kOneWorker)) {
      EXPECT_TRUE(errors.empty()) << m.name << ": " << errors.front();
    }
    c.strategy.workers = 1;
    EXPECT_TRUE(validate(c).empty()) << m.name;
  }
}

// ARCHITECTURE.md, "Where to add things": a method comes with its golden
// trajectory (EveryStrategy/GoldenTrajectory compares it; its message says
// how to record one). A golden file no method has is a renamed or removed
// method's, which nothing compares any more.
TEST(StrategyTable, EveryMethodHasAGoldenTrajectoryAndEveryGoldenFileAMethod) {
  namespace fs = std::filesystem;
  const fs::path golden = fs::path(ATOLL_SOURCE_DIR) / "tests" / "golden";
  for (const Method& m : strategy_table())
    EXPECT_TRUE(fs::exists(golden / (std::string(m.name) + ".json")))
        << "strategy '" << m.name << "' has no tests/golden/" << m.name << ".json: record it with "
        << "ATOLL_UPDATE_GOLDEN=1 build/tests/atoll_tests --gtest_filter='EveryStrategy/GoldenTrajectory.*/" << m.name
        << "'";
  for (const auto& entry : fs::directory_iterator(golden)) {
    if (entry.path().extension() != ".json") continue;
    EXPECT_NE(find_method(entry.path().stem().string()), nullptr)
        << entry.path() << " is the golden trajectory of no method of the table";
  }
}

TEST(StrategyTable, EverySuitesExclusionsNameMethodsOfTheTableWithAReason) {
  for (const auto* list : testing::every_exclusion_list()) {
    for (const testing::Exclusion& e : *list) {
      EXPECT_NE(find_method(e.method), nullptr)
          << "an exclusion names '" << e.method << "', which is not in the strategy table (renamed or removed?)";
      EXPECT_GT(std::string(e.why).size(), 10u) << e.method << ": say why the suite cannot run it";
    }
  }
}

TEST(StrategyTable, HelpOfStrategyNameListsEveryMethod) { EXPECT_EQ(field_help("strategy.name"), strategy_choices()); }

// strategy.topology's table: every topology parses to its own value, is
// accepted for a method that takes any topology, and is named in --help.
TEST(TopologyTable, EveryTopologyParsesValidatesAndIsInTheHelp) {
  const std::string help = field_help("strategy.topology");
  for (const TopologyInfo& t : topology_table()) {
    EXPECT_EQ(parse_topology(t.name), t.value) << t.name;
    Config c;
    c.strategy.name = "sparta";
    c.strategy.workers = 4;
    c.strategy.topology = t.name;
    EXPECT_TRUE(validate(c).empty()) << t.name << ": " << join_choices(validate(c));
    EXPECT_NE(help.find(t.name), std::string::npos) << t.name << " is not in --help: " << help;
  }
  EXPECT_THROW(parse_topology("star"), std::invalid_argument);
}

}  // namespace
}  // namespace atl
