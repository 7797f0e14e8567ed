// atoll retime and atoll whatif: finished runs on other networks (docs/RETIME.md).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "atoll/whatif.h"

class NetworkCommands {
 public:
  explicit NetworkCommands(CLI::App& app);
  // Runs the command the user named; false when it was neither of these.
  bool run();

 private:
  void retime();
  void whatif();
  atl::Projection projection() const;

  CLI::App* retime_ = nullptr;
  CLI::App* whatif_ = nullptr;
  std::string retime_run_, retime_out_;
  bool retime_overwrite_ = false;
  std::vector<std::string> whatif_runs_;
  std::string bandwidths_ = "10Mbit/s:100Gbit/s", latency_, whatif_out_, relay_bandwidth_;
  std::string project_device_flops_;
  double project_params_ = 0, project_step_time_ = 0, project_mfu_ = 0.4;
  atl::WhatifOptions whatif_opts_;
};
