#include "util/machine.h"

#include <cpuid.h>
#include <dlfcn.h>

#include <cstdlib>
#include <fstream>

namespace atl {

std::string blas_kernels() {
  // Looked up at run time so that builds against other BLAS libraries link.
  using CoreName = char* (*)();
  static const auto corename = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return corename ? std::string(corename()) : std::string();
}

namespace {

std::string cpuinfo_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string("unknown") : line.substr(start);
  }
  return "unknown";
}

}  // namespace

MachineInfo machine_info() {
  MachineInfo m;
  m.cpu = cpuinfo_model_name();
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char vendor[13] = {};
    for (int i = 0; i < 4; ++i) {
      vendor[i] = static_cast<char>(b >> (8 * i));
      vendor[4 + i] = static_cast<char>(d >> (8 * i));
      vendor[8 + i] = static_cast<char>(c >> (8 * i));
    }
    m.vendor = vendor;
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    // The display family and model, as Intel's and AMD's manuals define them.
    const int base_family = static_cast<int>((a >> 8) & 0xf), base_model = static_cast<int>((a >> 4) & 0xf);
    m.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
    m.model =
        base_family == 0xf || base_family == 0x6 ? base_model | static_cast<int>(((a >> 16) & 0xf) << 4) : base_model;
  }
  m.isa = __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2" : "sse";
  if (m.isa == "avx512" && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5))) m.isa = "avx512_bf16";
  m.blas_kernels = blas_kernels();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  m.blas_coretype = coretype ? coretype : "";
  return m;
}

std::string describe_machine(const MachineInfo& m) {
  std::string s = m.cpu + " (" + (m.vendor.empty() ? std::string("unknown vendor") : m.vendor) + " family " +
                  std::to_string(m.family) + " model " + std::to_string(m.model) + ", " + m.isa + "); ";
  s += m.blas_kernels.empty() ? std::string("BLAS other than OpenBLAS") : "OpenBLAS " + m.blas_kernels + " kernels";
  if (!m.blas_coretype.empty()) s += " (OPENBLAS_CORETYPE=" + m.blas_coretype + ")";
  return s;
}

}  // namespace atl
