#include "cost_command.h"

#include <iostream>
#include <stdexcept>
#include <vector>

CostCommand::CostCommand(CLI::App& app) {
  cost_ = app.add_subcommand("cost", "what one sync and a whole run cost on a network");
  cost_->add_option("--params", q_.params, "model parameters P")->capture_default_str();
  cost_->add_option("--dtype", dtype_, "payload codec, counted at its exact encoded size: " + atl::cost_codec_choices())
      ->capture_default_str();
  cost_->add_option("--workers", q_.workers, "N")->capture_default_str();
  cost_->add_option("--bandwidth", bandwidth_, "per-link bandwidth, e.g. 100Mbit/s")->capture_default_str();
  cost_->add_option("--download", download_, "per-link download bandwidth (\"\" = --bandwidth), e.g. 500Mbit/s")
      ->capture_default_str();
  cost_->add_option("--relay-bandwidth", relay_bandwidth_, "the relay's (ps) link each way (\"\" = --bandwidth)")
      ->capture_default_str();
  cost_->add_option("--latency", latency_, "per-message latency, e.g. 30ms")->capture_default_str();
  cost_->add_option("--algorithm", algorithm_, atl::collective_algorithm_choices())->capture_default_str();
  cost_->add_option("--strategy", q_.strategy, "ddp | localsgd | diloco | sparta")->capture_default_str();
  cost_->add_option("--inner-steps,-H", q_.inner_steps, "H for localsgd / diloco")->capture_default_str();
  cost_->add_option("--p", q_.sparta_p, "fraction averaged per step (sparta)")->capture_default_str();
  cost_->add_option("--steps", q_.steps, "inner steps in the run")->capture_default_str();
  cost_->add_option("--step-time", q_.step_seconds, "compute seconds per inner step")->capture_default_str();
  cost_
      ->add_option("--islands", q_.islands,
                   "I islands of --devices each (0 = none); --bandwidth/--latency are then each device's "
                   "wide-area link")
      ->capture_default_str();
  cost_->add_option("--devices", q_.devices, "D devices per island")->capture_default_str();
  cost_->add_option("--intra-bandwidth", intra_bandwidth_, "bandwidth of the links inside an island")
      ->capture_default_str();
  cost_->add_option("--intra-latency", intra_latency_, "latency inside an island")->capture_default_str();
  cost_->add_flag("--shared-uplink", q_.shared_uplink,
                  "an island's devices share one wide-area link (flat and sharded get bandwidth / D each)");
  cost_
      ->add_option("--exchange", q_.exchange, atl::island_exchange_choices() + " | all: which exchanges get run totals")
      ->capture_default_str();
}

bool CostCommand::run() {
  if (!cost_->parsed()) return false;
  q_.codec = dtype_;
  q_.bandwidth = atl::parse_bandwidth(bandwidth_);
  q_.latency = atl::parse_duration(latency_);
  q_.algo = atl::parse_algorithm(algorithm_);
  // The parsers do not know which flag they read: the message names it.
  auto flag_value = [](const char* flag, double (*parse)(const std::string&), const std::string& text) {
    try {
      return parse(text);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("cost: ") + flag + ": " + e.what());
    }
  };
  q_.intra_bandwidth = flag_value("--intra-bandwidth", atl::parse_bandwidth, intra_bandwidth_);
  q_.intra_latency = flag_value("--intra-latency", atl::parse_duration, intra_latency_);
  if (!download_.empty()) q_.download = flag_value("--download", atl::parse_bandwidth, download_);
  if (!relay_bandwidth_.empty())
    q_.server_bandwidth = flag_value("--relay-bandwidth", atl::parse_bandwidth, relay_bandwidth_);
  const atl::CostReport estimate = atl::estimate_cost(q_);  // checks the values first (I x D in range)
  std::vector<std::string> given;
  for (const CLI::Option* o : cost_->get_options())
    if (o->count() > 0) given.push_back(o->get_name());
  atl::check_cost_flags(q_, given);
  std::cout << atl::format_cost(q_, estimate);
  return true;
}
