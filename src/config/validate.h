// The checks of the sections config owns (sections.cpp). validate()
// (src/setup/validate.cpp) composes them with the other areas' checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// [run], [data], [model], [optim], [train].
void validate_training(const Config& cfg, std::vector<std::string>& errors);
// [faults]: its lists' syntax and workers; windows start at or after the
// `warmup` steps every worker takes part in.
void validate_faults(const Config& cfg, int64_t warmup, std::vector<std::string>& errors);

}  // namespace atl
