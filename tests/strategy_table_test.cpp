// The strategy table (strategy/table.h): every line names real config keys,
// builds its method, and reaches validate(), make_strategy() and --help.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <set>

#include "atoll/comm.h"
#include "atoll/setup.h"
#include "atoll/strategy.h"
#include "strategy/table.h"

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

TEST(StrategyTable, HelpOfStrategyNameListsEveryMethod) {
  Config c;
  std::string help;
  visit_fields(c, [&](FieldRef& f) {
    if (f.name == "strategy.name") help = f.help;
  });
  EXPECT_EQ(help, strategy_choices());
}

}  // namespace
}  // namespace atl
