// atoll prepare brown | text | mnist: a data set into a prepared data folder.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

class DataCommands {
 public:
  explicit DataCommands(CLI::App& app);
  // Runs the command the user named; false when it was none of these.
  bool run();

 private:
  CLI::App* brown_ = nullptr;
  CLI::App* text_ = nullptr;
  CLI::App* mnist_ = nullptr;
  std::string src_, out_, tokenizer_ = "char";
};
