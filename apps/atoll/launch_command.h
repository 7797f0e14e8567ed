// atoll launch: a real job of N ranks per host, as torchrun starts one;
// every rank runs this binary's `atoll train` (docs/DISTRIBUTED.md).
#pragma once

#include <CLI/CLI.hpp>

#include "atoll/launch.h"

class LaunchCommand {
 public:
  explicit LaunchCommand(CLI::App& app);
  // Runs the command if the user named it; false otherwise.
  bool run(int& exit_code);

 private:
  CLI::App* launch_ = nullptr;
  atl::LaunchOptions opts_;
};
