#include "network_commands.h"

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "atoll/net.h"
#include "atoll/retime.h"
#include "util/file_io.h"

NetworkCommands::NetworkCommands(CLI::App& app) {
  retime_ = app.add_subcommand(
      "retime",
      "a finished run's events on another network, without training again: atoll retime RUN -o OUT "
      "[--network.bandwidth=1Gbit/s --network.latency=30ms ...] (network keys and islands.exchange only)");
  retime_->allow_extras();
  retime_->add_option("run", retime_run_, "finished run folder (with timing/)")->required();
  retime_->add_option("-o,--output", retime_out_, "the retimed run's folder (compare, report and results read it)")
      ->required();
  retime_->add_flag("--overwrite", retime_overwrite_, "replace an existing output folder");

  whatif_ = app.add_subcommand(
      "whatif",
      "which method reaches the target first at which bandwidth: finished runs retimed over a log grid of "
      "bandwidths, with the crossover bandwidths against the baseline (Markdown)");
  whatif_->add_option("runs", whatif_runs_, "finished run folders (seeds of a setting are grouped)")->required();
  whatif_->add_option("--bandwidth", bandwidths_, "FROM:TO, e.g. 10Mbit/s:100Gbit/s")->capture_default_str();
  whatif_->add_option("--points-per-decade", whatif_opts_.points_per_decade, "grid points per decade")
      ->capture_default_str();
  whatif_->add_option("--latency", latency_, "latency for every run (default: each run's own network.latency)");
  whatif_->add_option("--download-ratio", whatif_opts_.download_ratio,
                      "links download at this multiple of the grid's bandwidth, which is their upload (110 up / 500 "
                      "down: 4.55; default: each run's own links)");
  whatif_->add_option(
      "--algorithm", whatif_opts_.algorithm,
      "network.algorithm for every run: " + atl::collective_algorithm_choices() + " (default: each run's own)");
  whatif_->add_option("--relay-bandwidth", relay_bandwidth_,
                      "the relay's link (network.server_bandwidth) for every run, e.g. 10Gbit/s");
  whatif_->add_option("--target-loss", whatif_opts_.target_loss,
                      "eval loss to reach (default: the report's, the baseline's eval loss at 90% of its run)");
  whatif_->add_option("--baseline", whatif_opts_.baseline, "setting the crossovers are against (default: DDP)");
  whatif_->add_option("-o,--output", whatif_out_, "also write the Markdown to this file");
  for (CLI::App* cmd : {retime_, whatif_}) {
    cmd->add_option("--project-params", project_params_,
                    "PROJECTION: charge a model of this many parameters (payloads scale by it / the run's)");
    cmd->add_option("--project-step-time", project_step_time_, "PROJECTION: compute seconds per step of that model");
    cmd->add_option("--project-device-flops", project_device_flops_,
                    "PROJECTION: peak FLOP/s of its device (e.g. 989e12); step time = 6 P tokens / (FLOP/s x MFU)");
    cmd->add_option("--project-mfu", project_mfu_, "PROJECTION: model FLOPs utilisation with --project-device-flops")
        ->capture_default_str();
  }
}

atl::Projection NetworkCommands::projection() const {
  atl::Projection p;
  p.params = project_params_;
  p.step_seconds = project_step_time_;
  p.device_flops = project_device_flops_.empty() ? 0 : std::stod(project_device_flops_);
  p.mfu = project_mfu_;
  if (!p.active() && (p.step_seconds > 0 || p.device_flops > 0))
    throw std::invalid_argument("a projection needs --project-params=P (the model it charges)");
  if (p.active() && p.step_seconds <= 0 && p.device_flops <= 0)
    throw std::invalid_argument(
        "--project-params needs the model's compute: --project-step-time=S or "
        "--project-device-flops=F (with --project-mfu)");
  if (p.active() && !(p.mfu > 0 && p.mfu <= 1)) throw std::invalid_argument("--project-mfu must be in (0, 1]");
  return p;
}

bool NetworkCommands::run() {
  if (retime_->parsed()) {
    retime();
    return true;
  }
  if (whatif_->parsed()) {
    whatif();
    return true;
  }
  return false;
}

void NetworkCommands::retime() {
  const atl::Projection p = projection();
  const atl::RetimedRun r = atl::retime_run(retime_run_, retime_->remaining(), p);
  atl::write_retimed_run(r, retime_run_, retime_out_, retime_overwrite_);
  std::printf("retimed %s -> %s", retime_run_.c_str(), retime_out_.c_str());
  if (p.active()) std::printf(" (PROJECTION: payloads x %.4g, compute x %.4g)", r.bytes_scale, r.compute_scale);
  std::printf("\n");
}

void NetworkCommands::whatif() {
  const size_t colon = bandwidths_.find(':');
  if (colon == std::string::npos) throw std::invalid_argument("--bandwidth takes FROM:TO, e.g. 10Mbit/s:100Gbit/s");
  whatif_opts_.bandwidth_from = atl::parse_bandwidth(bandwidths_.substr(0, colon));
  whatif_opts_.bandwidth_to = atl::parse_bandwidth(bandwidths_.substr(colon + 1));
  if (!latency_.empty()) whatif_opts_.latency = atl::parse_duration(latency_);
  if (!relay_bandwidth_.empty()) whatif_opts_.relay_bandwidth = atl::parse_bandwidth(relay_bandwidth_);
  whatif_opts_.projection = projection();
  const atl::WhatifResult r = atl::run_whatif(whatif_runs_, whatif_opts_);
  const std::string md = atl::whatif_markdown(r);
  std::cout << md;
  if (!whatif_out_.empty()) atl::write_file_atomic(whatif_out_, md);
}
