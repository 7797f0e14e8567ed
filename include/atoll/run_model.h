// A finished run's model, handed back to PyTorch users: exported as
// safetensors or TorchScript (`atoll export`), and asked for text
// (`atoll sample`). A run folder keeps the weights its final evaluation
// judged in model.safetensors (and a TorchScript run its module as
// model.pt); docs/PYTORCH.md shows the round trip. The train area's, as
// it reads run folders (src/train/run_model.cpp); the model area's own
// export (names, formats) is src/model/export.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "atoll/config.h"
#include "atoll/model.h"

namespace atl {

// The run's config and its final model, rebuilt from <run>/model.safetensors.
// Throws std::runtime_error saying what is missing (an unfinished run, a run
// from before atoll kept its weights, a damaged file).
struct RunModel {
  Config cfg;
  std::shared_ptr<Model> model;
  std::string weights_path;  // <run>/model.safetensors
};
RunModel load_run_model(const std::string& run_dir);

struct ExportOptions {
  std::string format = "safetensors";  // safetensors | torchscript (TorchScript runs only)
  bool overwrite = false;              // replace an existing output file
};
// Writes the run's final model to `out` (atomically). Returns a one-line
// description (tensors, parameters, the names' convention).
std::string export_run(const std::string& run_dir, const std::string& out, const ExportOptions& o);

struct TextSampleOptions {
  std::string prompt = "\n";
  int64_t tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 40;
  uint64_t seed = 1;
};
// The prompt and `tokens` generated tokens, decoded: runs of the built-in
// GPT or of a TorchScript module whose forward(inputs) returns logits
// (B, T, V), on char- or byte-tokenized text, whose data folder (meta.json)
// gives the tokenizer. Other runs are refused saying why.
std::string sample_run(const std::string& run_dir, const TextSampleOptions& o);

}  // namespace atl
