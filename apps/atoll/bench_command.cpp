#include "bench_command.h"

#include <iostream>
#include <map>
#include <sstream>

#include "atoll/config.h"
#include "cli_args.h"

BenchCommand::BenchCommand(CLI::App& app) {
  bench_ = app.add_subcommand(
      "bench",
      "performance figures, each with its ratio to a reference measured in the same run: atoll bench "
      "[config.toml] [--quick] [--only=GROUPS] [--json=FILE] [--section.key=value ...]");
  bench_->allow_extras();
  bench_->add_flag("--quick", opts_.quick, "fewer sizes, steps and repetitions (about 3 minutes)");
  std::string groups;
  for (const auto& g : atl::bench_groups()) groups += (groups.empty() ? "" : ", ") + g;
  bench_->add_option("--only", only_, "comma-separated groups: " + groups + " (default: all, about 15 minutes)");
  bench_->add_option("--json", opts_.json_path, "also write the figures to this JSON file");
  bench_->add_option("--data-root", opts_.data_root, "prepared data sets (the simulation group needs brown)")
      ->capture_default_str();
}

bool BenchCommand::run() {
  if (!bench_->parsed()) return false;
  std::map<std::string, std::string> dist_flags;
  opts_.overrides = collect_overrides(bench_->remaining(), opts_.config_path, dist_flags);
  if (!dist_flags.empty()) throw atl::ConfigError("atoll bench takes no --" + dist_flags.begin()->first);
  std::stringstream groups(only_);
  for (std::string g; std::getline(groups, g, ',');)
    if (!g.empty()) opts_.groups.push_back(g);
  atl::run_benchmarks(opts_, std::cout);
  return true;
}
