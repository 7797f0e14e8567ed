// A finished run's model: rebuilt from its folder, exported, sampled.
#include <ATen/ATen.h>

#include <filesystem>
#include <stdexcept>

#include "atoll/data.h"
#include "atoll/run_model.h"
#include "atoll/setup.h"
#include "model/export.h"
#include "model/sample.h"
#include "model/torchscript.h"
#include "train/data_source.h"

namespace atl {
namespace fs = std::filesystem;

RunModel load_run_model(const std::string& run_dir) {
  const fs::path dir(run_dir);
  const fs::path config_path = dir / "config.toml";
  if (!fs::is_regular_file(config_path))
    throw std::runtime_error("'" + run_dir + "' is not a run folder (no config.toml)");
  RunModel r;
  r.cfg = load_config(config_path.string(), {});
  r.weights_path = (dir / kRunModelFile).string();
  if (!fs::is_regular_file(r.weights_path))
    throw std::runtime_error("'" + run_dir + "' has no " + kRunModelFile + ": the run has not finished (resume it " +
                             "with --run.resume=true), or it was made by an atoll that did not keep final weights");
  const SafetensorsFile weights = read_safetensors(r.weights_path);
  int64_t vocab = 0;
  if (r.cfg.model.kind == "gpt") {
    for (const auto& t : weights.tensors)
      if (t.name == "transformer.wte.weight" && t.tensor.dim() == 2) vocab = t.tensor.size(0);
    if (vocab < 1) throw std::runtime_error(r.weights_path + ": no 2-d transformer.wte.weight to size the vocabulary");
  }
  if (r.cfg.model.kind == "torchscript") r.cfg.model.path = (dir / kRunModuleFile).string();
  r.model = make_model(r.cfg.model, vocab, static_cast<uint64_t>(r.cfg.run.seed));
  load_exported_tensors(*r.model, r.cfg.model, weights.tensors, r.weights_path);
  return r;
}

std::string export_run(const std::string& run_dir, const std::string& out, const ExportOptions& o) {
  if (o.format != "safetensors" && o.format != "torchscript")
    throw std::invalid_argument("--format = '" + o.format + "': allowed values are safetensors | torchscript");
  if (fs::exists(out) && !o.overwrite) throw std::runtime_error("'" + out + "' exists; pass --overwrite to replace it");
  const RunModel run = load_run_model(run_dir);
  const std::vector<NamedTensor> tensors = exported_tensors(*run.model, run.cfg.model);
  const std::string params = std::to_string(run.model->num_params()) + " parameters";
  if (o.format == "torchscript") {
    if (run.cfg.model.kind != "torchscript")
      throw std::invalid_argument(std::string("--format=torchscript re-saves a TorchScript run's module; this run ") +
                                  "trained the built-in '" + run.cfg.model.kind + "' model: export it as safetensors");
    std::vector<std::pair<std::string, at::Tensor>> weights;
    for (const auto& t : tensors) weights.emplace_back(t.name, t.tensor);
    save_torchscript_with_weights(run.cfg.model.path, weights, out);
    return "TorchScript module with the trained weights (" + params + ")";
  }
  write_safetensors(out, tensors, read_safetensors(run.weights_path).metadata);
  const std::string names = run.cfg.model.kind == "gpt" ? "nanoGPT's names" : "module paths";
  return std::to_string(tensors.size()) + " tensors, " + params + ", named by " + names;
}

std::string sample_run(const std::string& run_dir, const TextSampleOptions& o) {
  const RunModel run = load_run_model(run_dir);
  const std::string kind = run.cfg.model.kind, dataset = run.cfg.data.dataset;
  if (kind != "gpt" && kind != "torchscript")
    throw std::invalid_argument("atoll sample generates text from language models (model.kind = gpt or " +
                                std::string("torchscript); this run trained the built-in '") + kind +
                                "' image classifier");
  // The tokenizer comes with text data; npy arrays and MNIST images have none.
  if (dataset == "npy" || dataset == "mnist")
    throw std::invalid_argument("atoll sample needs a language model trained on char- or byte-level text " +
                                std::string("(data.dataset = brown | text), whose data folder gives the tokenizer; "
                                            "this run trained on data.dataset = ") +
                                dataset + ", which has none");
  const std::string dir = data_dir(run.cfg.data);
  TokenData data;
  try {
    data = load_token_data(dir, run.cfg.data.vocab_size);
  } catch (const std::exception& e) {
    throw std::runtime_error("sampling needs the run's tokenizer, from its data folder: " + std::string(e.what()));
  }
  std::unique_ptr<Tokenizer> tokenizer;
  if (data.tokenizer == "char")
    tokenizer = make_char_tokenizer(data.char_vocab);
  else if (data.tokenizer == "byte")
    tokenizer = make_byte_tokenizer();
  else
    throw std::invalid_argument("'" + dir + "' holds token ids without a tokenizer (" + data.tokenizer +
                                "); atoll sample needs char- or byte-level text (atoll prepare text --tokenizer)");
  SampleOptions s;
  s.tokens = o.tokens;
  s.temperature = o.temperature;
  s.top_k = o.top_k;
  s.seed = o.seed;
  s.block_size = run.cfg.model.block_size;  // text examples are block_size tokens, for every model kind
  s.vocab_size = tokenizer->vocab_size();
  std::vector<int32_t> prompt;
  try {
    prompt = tokenizer->encode(o.prompt.empty() ? std::string("\n") : o.prompt);
  } catch (const std::exception& e) {
    throw std::invalid_argument("the prompt cannot be encoded with this run's " + data.tokenizer +
                                " vocabulary: " + e.what());
  }
  return tokenizer->decode(sample_tokens(*run.model, prompt, s));
}

}  // namespace atl
