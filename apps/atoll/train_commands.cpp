#include "train_commands.h"

#include <cstdio>
#include <iostream>
#include <map>

#include "atoll/config.h"
#include "atoll/dist.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "cli_args.h"
#include "console.h"

TrainCommands::TrainCommands(CLI::App& app) {
  train_ = app.add_subcommand("train", "train a model: atoll train [config.toml] [--section.key=value ...]");
  train_->allow_extras();
  train_->footer(atl::describe_fields() +
                 "\nShortcuts: --strategy=NAME --workers=N --steps=N --name=RUN --seed=N --overwrite\n");
  config_ = app.add_subcommand("config", "print the resolved config: atoll config [config.toml] [overrides]");
  config_->allow_extras();
}

bool TrainCommands::run(int& exit_code) {
  if (train_->parsed()) {
    exit_code = train(train_->remaining(), false);
    return true;
  }
  if (config_->parsed()) {
    exit_code = train(config_->remaining(), true);
    return true;
  }
  return false;
}

int TrainCommands::train(const std::vector<std::string>& args, bool print_only) {
  std::string config_path;
  std::map<std::string, std::string> dist_flags;
  auto overrides = collect_overrides(args, config_path, dist_flags);
  atl::DistOptions dist = atl::dist_options_from_env();
  apply_dist_flags(dist_flags, dist);
  const bool real = !dist_flags.empty() || atl::dist_requested_by_env();
  if (real) overrides = atl::with_one_worker_per_rank(overrides, dist);
  atl::Config cfg = atl::load_config(config_path, overrides);
  if (print_only) {
    std::cout << atl::to_toml(cfg);
    return 0;
  }
  const std::string restart = atl::resume_after_restart(cfg, real ? dist.rank : -1);
  if (!restart.empty()) std::fprintf(stderr, "atoll: %s\n", restart.c_str());
  if (real) {
    atl::validate(dist);
    const bool leader = dist.rank == 0;
    if (leader)
      std::printf("atoll train (real, %lld ranks over Gloo, store %s:%d): %s, %lld steps, model %s -> %s/%s\n",
                  (long long)dist.world_size, dist.master_addr.c_str(), dist.master_port, cfg.strategy.name.c_str(),
                  (long long)cfg.train.steps, cfg.model.kind.c_str(), cfg.run.out_dir.c_str(), cfg.run.name.c_str());
    std::fflush(stdout);
    atl::RunSummary s = atl::train_distributed(cfg, dist, progress_hooks(cfg));
    if (leader) print_done(s);
    return s.stopped_at >= 0 && s.stopped_by_signal ? 130 : 0;
  }
  const atl::IslandLayout islands = atl::island_layout(cfg);
  const std::string where = islands.devices > 1 ? " (" + std::to_string(islands.islands) + " islands x " +
                                                      std::to_string(islands.devices) + " devices, " +
                                                      cfg.islands.exchange + " exchange)"
                                                : std::string();
  std::printf("atoll train: %s, %lld worker(s)%s, %lld steps, model %s -> %s/%s\n", cfg.strategy.name.c_str(),
              (long long)cfg.strategy.workers, where.c_str(), (long long)cfg.train.steps, cfg.model.kind.c_str(),
              cfg.run.out_dir.c_str(), cfg.run.name.c_str());
  std::fflush(stdout);  // before any error on stderr, also when stdout is a pipe
  const atl::RunSummary s = atl::train(cfg, progress_hooks(cfg));
  print_done(s);
  return s.stopped_at >= 0 && s.stopped_by_signal ? 130 : 0;  // 130: as a shell reports SIGINT
}
