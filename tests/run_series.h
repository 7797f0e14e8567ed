// One figure of a finished run's events, in order (the tests comparing two
// runs' trajectories).
#pragma once

#include <vector>

#include "tiny_data.h"

namespace atl {

// `key` of every `event` event that has it (e.g. "train", "loss").
inline std::vector<double> series(const RunSummary& s, const char* event, const char* key) {
  std::vector<double> out;
  for (const auto& e : events_of(s))
    if (e.at("event") == event && e.contains(key)) out.push_back(e.at(key).get<double>());
  return out;
}

}  // namespace atl
