// Named compute devices for the modelled clock (network.device). Kept out
// of atoll/net.h so the config field list can name them without the
// network model.
#pragma once

#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// A device whose peak rate the modelled compute clock charges steps at
// (network.device; src/net/devices.cpp holds the table).
struct ComputeDevice {
  std::string name;
  double fp32_flops = 0;  // dense peak FLOP/s in fp32
  double bf16_flops = 0;  // dense peak FLOP/s in bf16 (for train.precision = bf16)
  std::string what;       // the hardware it stands for
};
const std::vector<ComputeDevice>& compute_devices();
std::string compute_device_names();                                 // "cpu2 | a100 | ..."
const ComputeDevice* find_compute_device(const std::string& name);  // nullptr if unknown
// Peak FLOP/s the modelled clock uses: network.device_flops when > 0, else
// the named device's fp32 rate. Throws std::invalid_argument for an unknown device.
double device_peak_flops(const NetworkConfig& cfg);
// One line for the run folder saying which clock charged compute and at what rate.
std::string describe_compute_clock(const NetworkConfig& cfg, double flops_per_step);

}  // namespace atl
