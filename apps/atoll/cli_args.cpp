#include "cli_args.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "atoll/config.h"

namespace {

// Short flags that map onto config keys.
const std::pair<const char*, const char*> kShortcuts[] = {
    {"strategy", "strategy.name"}, {"workers", "strategy.workers"}, {"steps", "train.steps"}, {"name", "run.name"},
    {"seed", "run.seed"},          {"overwrite", "run.overwrite"},  {"resume", "run.resume"}};

// torchrun's flags for a real run; each also comes from its environment variable.
const char* const kDistFlags[] = {"rank",         "world-size",    "master-addr", "master-port",
                                  "dist-timeout", "dist-sync-ops", "insecure"};

}  // namespace

bool is_dist_flag(const std::string& key) {
  return std::find(std::begin(kDistFlags), std::end(kDistFlags), key) != std::end(kDistFlags);
}

std::vector<std::string> collect_overrides(const std::vector<std::string>& args, std::string& config_path,
                                           std::map<std::string, std::string>& dist_flags) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (!config_path.empty())
        throw atl::ConfigError("unexpected argument '" + a + "': only one config file may be given");
      config_path = a;
      continue;
    }
    std::string body = a.substr(2), key, value;
    const auto eq = body.find('=');
    if (eq != std::string::npos) {
      key = body.substr(0, eq);
      value = body.substr(eq + 1);
    } else {
      key = body;
      if (key == "overwrite" || key == "resume" || key == "dist-sync-ops" || key == "insecure") {  // switches
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        throw atl::ConfigError("flag --" + key + " needs a value");
      }
    }
    if (is_dist_flag(key)) {
      dist_flags[key] = value;
      continue;
    }
    for (const auto& [short_name, full] : kShortcuts)
      if (key == short_name) key = full;
    if (key.find('.') == std::string::npos)
      throw atl::ConfigError("unknown flag --" + key + " (config keys look like --train.steps=100; see --help)");
    out.push_back(key + "=" + value);
  }
  return out;
}

void apply_dist_flags(const std::map<std::string, std::string>& flags, atl::DistOptions& opts) {
  for (const auto& [key, value] : flags) {
    if (key == "dist-timeout") {  // its own message: what is wrong and the allowed range
      try {
        opts.timeout_s = atl::parse_dist_timeout(value, "--dist-timeout");
      } catch (const std::invalid_argument& e) {
        throw atl::ConfigError(e.what());
      }
      continue;
    }
    try {
      if (key == "rank") opts.rank = std::stoll(value);
      if (key == "world-size") opts.world_size = std::stoll(value);
      if (key == "master-addr") opts.master_addr = value;
      if (key == "master-port") opts.master_port = std::stoi(value);
      if (key == "dist-sync-ops") opts.sync_before_ops = value == "true" || value == "1";
      if (key == "insecure") opts.insecure = value == "true" || value == "1";
    } catch (const std::logic_error&) {
      throw atl::ConfigError("flag --" + key + "='" + value + "' is not a number");
    }
  }
}
