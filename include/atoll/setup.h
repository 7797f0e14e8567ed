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

// Whom load_config() holds an override of a method section ([ddp] [diloco]
// [sparta] [palsgd] [demo] [streaming] [noloco] [sparseloco] [desloc]) to.
enum class OverrideCheck {
  kChosenMethod,  // a run's overrides: refused when the config's strategy.name does not read the key
  kAnyMethod,     // a config every method is run from (`atoll bench`): any key of any method
};

// Config{} <- file (optional) <- overrides, then validate(); throws
// ConfigError with every problem (parse and value problems together). With
// kChosenMethod an override the chosen method does not read is one of them:
// a run would otherwise silently differ from what its command line says. A
// config file's keys are never refused (presets set several methods' keys
// and `atoll sweep` picks the method per run).
Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   OverrideCheck check = OverrideCheck::kChosenMethod);

// "" when cfg's method (strategy.name) reads the dotted `key`, or `key` is
// not in a method section, or the method is unknown (validate() says so);
// else why it is not read: the method, what it reads, which methods read the
// key. The strategy table's `reads` column says what each method reads; with
// islands.devices > 1 every method also reads the gradient all-reduce keys.
std::string unread_key_problem(const Config& cfg, const std::string& key);
// One problem per override ("section.key=value") that unread_key_problem() refuses.
void check_overrides_read(const Config& cfg, const std::vector<std::string>& overrides,
                          std::vector<std::string>& errors);

// `--help` text: every key with type, default and meaning, each list of
// choices (strategies, codecs, devices) from its area's table.
std::string describe_fields();
// One key's help line as --help prints it (each list of choices filled in);
// "" for a key that is not a field.
std::string field_help(const std::string& key);

}  // namespace atl
