// The net area's config checks; validate() (src/setup/validate.cpp)
// composes them with every other area's.
#pragma once

#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// [network]: units, per-worker lists, the compute-time model.
void validate_network(const Config& cfg, std::vector<std::string>& errors);
// [islands] and the two-level network's keys.
void validate_islands(const Config& cfg, std::vector<std::string>& errors);

}  // namespace atl
