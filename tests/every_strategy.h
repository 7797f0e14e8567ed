// The strategy table (src/strategy/table.cpp) as the values of parameterised
// suites: a suite that runs every method takes every_strategy(), so a method
// added to the table gets that suite's coverage (golden trajectory, resume,
// real equals simulated, retime) the day it lands, not when someone
// remembers a hand-written list. A method a suite genuinely cannot run is
// left out by one of the exclusion lists below, each entry with its reason,
// all in this one file; StrategyTable tests that every entry still names a
// method of the table.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strategy/table.h"

namespace atl::testing {

// A method a suite leaves out, and why.
struct Exclusion {
  const char* method;
  const char* why;
};

// EveryStrategy/RealEqualsSimulated (dist_test.cpp): `atoll launch` of two
// ranks over Gloo against the simulator's two workers.
inline const std::vector<Exclusion>& not_run_on_two_ranks() {
  static const std::vector<Exclusion> list = {
      {"single", "trains one worker alone (kOneWorker): validate() refuses strategy.workers = 2"},
  };
  return list;
}

// Every exclusion list above (StrategyTable checks their entries).
inline std::vector<const std::vector<Exclusion>*> every_exclusion_list() { return {&not_run_on_two_ranks()}; }

// Every method's name in table order, less those `excluded` names.
inline std::vector<std::string> every_strategy(const std::vector<Exclusion>& excluded = {}) {
  std::vector<std::string> names;
  for (const Method& m : strategy_table()) {
    bool out = false;
    for (const Exclusion& e : excluded) out = out || std::string(e.method) == m.name;
    if (!out) names.push_back(m.name);
  }
  return names;
}

// The workers a test runs `method` with: 1 for a method that trains one
// worker alone (the table's kOneWorker), else `n`.
inline int64_t workers_for(const std::string& method, int64_t n) {
  const Method* m = find_method(method);
  return m != nullptr && (m->traits & kOneWorker) ? 1 : n;
}

// A parameterised test's name suffix: the method's name (table names are identifiers).
inline std::string method_test_name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace atl::testing
