// libFuzzer target: arbitrary bytes as the TOML text of a run config.
//
// Drives what load_config() does with a config file (src/setup/load.cpp):
// Config{}'s defaults, then apply_toml() on the input, then validate() and
// throw_if_errors(). A config that validates must also round-trip through
// to_toml() -> apply_toml() unchanged (config.h promises it).
//
// Expected: ConfigError (and any std::runtime_error / std::invalid_argument,
// toml::parse_error). Findings: crashes, sanitizer reports, other exceptions
// (std::length_error, std::bad_alloc...), a broken round trip, timeouts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/setup.h"

namespace {

void round_trip(atl::Config& cfg) {
  const std::string text = atl::to_toml(cfg);
  atl::Config again;
  std::vector<std::string> errors;
  atl::apply_toml(again, text, "<to_toml>", errors);
  if (!errors.empty() || atl::to_toml(again) != text) {
    std::fprintf(stderr, "to_toml() does not round-trip through apply_toml():\n%s\n", text.c_str());
    for (const auto& e : errors) std::fprintf(stderr, "  error: %s\n", e.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // load_config(path, {}) without the file system.
    atl::Config cfg;
    std::vector<std::string> errors;
    atl::apply_toml(cfg, text, "fuzz.toml", errors);
    for (auto& e : atl::validate(cfg)) errors.push_back(std::move(e));
    atl::throw_if_errors(errors);
    round_trip(cfg);
  } catch (const std::runtime_error&) {  // ConfigError, toml::parse_error
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
