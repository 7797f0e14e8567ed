// What machine a figure or a failure came from: the CPU (model name,
// vendor, family and model numbers, widest vector ISA) and the BLAS kernels
// in use. Bitwise properties are meant to hold on any x86-64 CPU, and they
// have broken on one CPU while holding on another (issue 34: OpenBLAS's
// AVX2 kernels on a Zen 5 round some products differently from its AVX-512
// ones), so every run's start event and every bench names the machine.
#pragma once

#include <string>

namespace atl {

struct MachineInfo {
  std::string cpu;            // /proc/cpuinfo's "model name" ("AMD EPYC 9B45"), or "unknown"
  std::string vendor;         // "AuthenticAMD", "GenuineIntel", ...
  int family = 0;             // CPUID's display family (26 = AMD Zen 5, 25 = Zen 3/4, 6 = Intel Core)
  int model = 0;              // CPUID's display model
  std::string isa;            // the widest vector ISA: "avx512_bf16", "avx512", "avx2", "sse"
  std::string blas_kernels;   // OpenBLAS's kernel family ("Haswell", "SkylakeX"), "" without OpenBLAS
  std::string blas_coretype;  // OPENBLAS_CORETYPE as the environment sets it ("" if unset); never changed
};

MachineInfo machine_info();

// One line: "AMD EPYC (AuthenticAMD family 26 model 2, avx512_bf16); OpenBLAS
// Haswell kernels (OPENBLAS_CORETYPE=Haswell)".
std::string describe_machine(const MachineInfo& m);

// OpenBLAS's kernel family ("Haswell", "Cooperlake"), or "" without OpenBLAS.
std::string blas_kernels();

}  // namespace atl
