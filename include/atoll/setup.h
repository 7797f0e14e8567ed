// A run's settings as every area agrees to them: the config read (atoll/
// config.h) and then checked by each area (config's own sections, each
// method through the strategy table, the codecs, the network), and the
// --help text naming each area's choices. This is the composition point
// above config, net, compress and strategy, so that config itself knows
// none of them (src/setup/).
#pragma once

#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// Every problem with the values (ranges, enums, combinations); empty if fine.
// Each area and each method checks its own keys; this gathers them.
std::vector<std::string> validate(const Config& cfg);

// Config{} <- file (optional) <- overrides, then validate(); throws
// ConfigError with every problem (parse and value problems together).
Config load_config(const std::string& path, const std::vector<std::string>& overrides);

// `--help` text: every key with type, default and meaning, each list of
// choices (strategies, codecs, devices) from its area's table.
std::string describe_fields();
// One key's help line as --help prints it (each list of choices filled in);
// "" for a key that is not a field.
std::string field_help(const std::string& key);

}  // namespace atl
