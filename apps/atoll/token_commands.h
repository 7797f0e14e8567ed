// atoll token new FILE: the job secret of a real run (docs/SECURITY.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

class TokenCommands {
 public:
  explicit TokenCommands(CLI::App& app);
  // Runs the command the user named; false when it was not one of these.
  bool run();

 private:
  CLI::App* new_ = nullptr;
  std::string path_;
};
