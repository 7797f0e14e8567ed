// atoll train and atoll config: a run (simulated, or one rank of a real
// job) from a config file and overrides, and the config it would run.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

class TrainCommands {
 public:
  explicit TrainCommands(CLI::App& app);
  // Runs the command the user named; false when it was neither of these.
  bool run(int& exit_code);

 private:
  int train(const std::vector<std::string>& args, bool print_only);

  CLI::App* train_ = nullptr;
  CLI::App* config_ = nullptr;
};
