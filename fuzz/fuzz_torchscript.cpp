// libFuzzer target: a TorchScript module file as model.kind = torchscript
// reads it (src/model/torchscript_model.cpp): LibTorch's loader, then
// atoll's contract checks (parameters, buffers, forward's signature), then a
// loss and per-example losses on a small batch, as training and evaluation
// call them.
//
// The input is written to a file in the scratch folder (scratch_folder.h)
// and loaded from there, as a run does. The seeds (fuzz/corpus/fuzz_torchscript)
// are modules fuzz/make_torchscript_seeds.cpp writes.
//
// Expected: atl::TorchScriptError (every failure of LibTorch's loader and of
// the module's code is turned into one). Findings: crashes, sanitizer
// reports in atoll's code, any other exception, timeouts. LibTorch itself is
// not instrumented, so a memory error inside its loader shows only if it
// crashes.
#include <unistd.h>

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/torchscript.h"
#include "scratch_folder.h"

namespace {

namespace fs = std::filesystem;

const fs::path module_file() { return atl_fuzz::scratch_folder("torchscript") / "module.pt"; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  atl_fuzz::put_file(module_file(), true, data, size);
  atl::ModelConfig cfg;
  cfg.kind = "torchscript";
  cfg.path = module_file().string();
  try {
    auto model = atl::make_torchscript_model(cfg, 1, 1);
    // The seeds' modules take (B, 4) float inputs and int64 labels < 4.
    const at::Tensor x = at::ones({2, 4}), y = at::zeros({2}, at::kLong);
    model->loss(x, y);
    model->example_losses(x, y);
  } catch (const atl::TorchScriptError&) {
  }
  return 0;
}
