#include "model_commands.h"

#include <cstdio>
#include <iostream>

ModelCommands::ModelCommands(CLI::App& app) {
  export_ = app.add_subcommand(
      "export",
      "a finished run's final model (the one its last evaluation judged) for PyTorch: atoll export RUN -o "
      "model.safetensors [--format=torchscript]");
  export_->add_option("run", export_run_, "finished run folder (with model.safetensors)")->required();
  export_->add_option("-o,--output", export_out_, "file to write")->required();
  export_
      ->add_option("--format", export_opts_.format,
                   "safetensors (tensors named by module path; the built-in GPT with nanoGPT's names) | "
                   "torchscript (a TorchScript run's module re-saved with the trained weights)")
      ->capture_default_str();
  export_->add_flag("--overwrite", export_opts_.overwrite, "replace an existing output file");

  sample_ = app.add_subcommand(
      "sample",
      "text from a finished language-model run (built-in GPT, or a TorchScript module returning logits) on char- or "
      "byte-level text: atoll sample RUN --prompt=\"The \"");
  sample_->add_option("run", sample_run_, "finished run folder (with model.safetensors)")->required();
  sample_->add_option("--prompt", sample_opts_.prompt, "text to continue")->capture_default_str();
  sample_->add_option("--tokens", sample_opts_.tokens, "tokens to generate")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sample_->add_option("--temperature", sample_opts_.temperature, "softmax temperature (0 = most likely token)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sample_->add_option("--top-k", sample_opts_.top_k, "sample among the k most likely tokens (0 = all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sample_->add_option("--seed", sample_opts_.seed, "the draws' seed: same seed, same text")->capture_default_str();
}

bool ModelCommands::run() {
  if (export_->parsed()) {
    const std::string what = atl::export_run(export_run_, export_out_, export_opts_);
    std::printf("exported %s -> %s: %s\n", export_run_.c_str(), export_out_.c_str(), what.c_str());
    return true;
  }
  if (sample_->parsed()) {
    std::cout << atl::sample_run(sample_run_, sample_opts_) << "\n";
    return true;
  }
  return false;
}
