// The arguments commands share: a config file, --section.key=value
// overrides with their shortcuts (--steps, --workers, ...), and torchrun's
// real-run flags (--rank, --world-size, ...), which also come from the
// environment (atl::dist_options_from_env).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "atoll/dist.h"

// Whether --`key` is one of the real-run flags.
bool is_dist_flag(const std::string& key);

// Turns leftover "--a.b=c", "--a.b c" and shortcut flags into "a.b=c"; a
// bare argument is the config file (`config_path`, at most one); the
// real-run flags go to `dist_flags` (name -> value) instead.
std::vector<std::string> collect_overrides(const std::vector<std::string>& args, std::string& config_path,
                                           std::map<std::string, std::string>& dist_flags);

// Applies the real-run flags over the environment's values.
void apply_dist_flags(const std::map<std::string, std::string>& flags, atl::DistOptions& opts);
