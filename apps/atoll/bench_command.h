// atoll bench: performance figures, each with its ratio to a reference
// measured in the same run (docs/BENCHMARKS.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "atoll/bench.h"

class BenchCommand {
 public:
  explicit BenchCommand(CLI::App& app);
  // Runs the command if the user named it; false otherwise.
  bool run();

 private:
  CLI::App* bench_ = nullptr;
  atl::BenchOptions opts_;
  std::string only_;
};
