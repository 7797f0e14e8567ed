// atoll cost: what one sync and a whole run cost on a network (closed forms,
// src/net/cost.cpp), without training.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "atoll/cost.h"
#include "atoll/net.h"

class CostCommand {
 public:
  explicit CostCommand(CLI::App& app);
  // Runs the command if the user named it; false otherwise.
  bool run();

 private:
  CLI::App* cost_ = nullptr;
  atl::CostQuery q_;
  std::string bandwidth_ = "100Mbit/s", latency_ = "0", algorithm_ = "ring", dtype_ = "bf16";
  std::string intra_bandwidth_ = "400Gbit/s", intra_latency_ = "0ms";
  std::string download_, relay_bandwidth_;  // "" = --bandwidth
};
