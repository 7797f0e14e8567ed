// Named devices for the modelled compute clock (network.compute_time =
// flops): a step costs its training FLOPs over the device's peak rate times
// network.mfu. The same run is then charged the same simulated time on a
// quiet or a loaded machine, and one worker and N workers on the same footing
// (DESIGN.md "Simulated time"). Adding a device is one line here.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "net/devices.h"

namespace atl {

const std::vector<ComputeDevice>& compute_devices() {
  // Dense peak rates from the vendors' data sheets (no sparsity); fp32 is
  // plain FP32 (not TF32) since atoll trains in fp32.
  static const std::vector<ComputeDevice> table = {
      {"cpu2", 1.2e11, 3.6e11,
       "a 2-core AVX-512 server CPU (fp32 GEMM 100-139 GFLOP/s measured on atoll's CI machines with oneDNN)"},
      {"a100", 19.5e12, 312e12, "NVIDIA A100 SXM"},
      {"h100", 67e12, 989e12, "NVIDIA H100 SXM"},
      {"rtx4090", 82.6e12, 165.2e12, "NVIDIA GeForce RTX 4090"},
  };
  return table;
}

std::string compute_device_names() {
  std::string out;
  for (const auto& d : compute_devices()) out += (out.empty() ? "" : " | ") + d.name;
  return out;
}

const ComputeDevice* find_compute_device(const std::string& name) {
  for (const auto& d : compute_devices())
    if (d.name == name) return &d;
  return nullptr;
}

double device_peak_flops(const NetworkConfig& cfg) {
  if (cfg.device_flops > 0) return cfg.device_flops;
  const ComputeDevice* d = find_compute_device(cfg.device);
  if (d == nullptr)
    throw std::invalid_argument("network.device = '" + cfg.device + "' is not a known device (" +
                                compute_device_names() + "); or set network.device_flops");
  return d->fp32_flops;
}

std::string describe_compute_clock(const NetworkConfig& cfg, double flops_per_step) {
  if (cfg.compute_time != "flops") return "measured: each step is charged the compute time it took on this machine";
  const double rate = device_peak_flops(cfg);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "modelled: %.4g FLOPs per step / (%.4g FLOP/s %s x MFU %.3g) = %.4g ms per step, plus each "
                "method's own work at the same rate",
                flops_per_step, rate, cfg.device_flops > 0 ? "(network.device_flops)" : cfg.device.c_str(), cfg.mfu,
                1e3 * flops_per_step / (rate * cfg.mfu));
  return buf;
}

}  // namespace atl
