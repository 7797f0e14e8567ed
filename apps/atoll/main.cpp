// atoll command line: each command group registers its subcommands and runs
// them (one file pair per group in this folder); this file only builds the
// app, picks the command the user named and turns errors into exit codes.
// No policy lives here: what a command does is the library's.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "atoll/setup.h"
#include "bench_command.h"
#include "command_list.h"
#include "cost_command.h"
#include "data_commands.h"
#include "experiment_commands.h"
#include "launch_command.h"
#include "model_commands.h"
#include "network_commands.h"
#include "token_commands.h"
#include "train_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"atoll: simulate and run low-communication distributed training (DDP, Local SGD, DiLoCo, ...)"};
  app.require_subcommand(1);
  app.footer(atl::describe_fields());
  // In the order `atoll` alone and --help list them.
  TrainCommands train(app);
  DataCommands data(app);
  CostCommand cost(app);
  LaunchCommand launch(app);
  BenchCommand bench(app);
  ExperimentCommands experiments(app);
  NetworkCommands network(app);
  ModelCommands model(app);
  TokenCommands token(app);
  if (argc == 1) {  // `atoll` alone
    print_command_list(app);
    return 0;
  }
  try {
    app.parse(argc, argv);
    int exit_code = 0;
    if (train.run(exit_code) || launch.run(exit_code) || experiments.run(exit_code)) return exit_code;
    if (data.run() || cost.run() || bench.run() || network.run() || model.run() || token.run()) return 0;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\natoll: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
