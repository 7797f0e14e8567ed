// atoll export and atoll sample: a finished run's model back to PyTorch, and
// text from a trained language model (docs/PYTORCH.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "atoll/run_model.h"

class ModelCommands {
 public:
  explicit ModelCommands(CLI::App& app);
  // Runs the command the user named; false when it was neither of these.
  bool run();

 private:
  CLI::App* export_ = nullptr;
  CLI::App* sample_ = nullptr;
  std::string export_run_, export_out_, sample_run_;
  atl::ExportOptions export_opts_;
  atl::TextSampleOptions sample_opts_;
};
