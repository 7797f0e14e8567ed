// The built-in models' input contracts, applied to npy data at load time.
#include "train/npy_fit.h"
#include "util/format.h"

#include <filesystem>
#include <vector>

namespace atl {
namespace {

constexpr int64_t kImageClasses = 10;  // the mlp and cnn output layers

}  // namespace

int64_t npy_vocab_size(const Config& cfg) {
  if (cfg.model.kind == "mlp" || cfg.model.kind == "cnn") return kImageClasses;
  return cfg.data.vocab_size;
}

void check_npy_fits_model(const NpyData& data, const Config& cfg, const std::string& dir) {
  const std::string kind = cfg.model.kind;
  auto file = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  const std::string who = "model.kind = " + kind;
  if (kind == "gpt") {
    if (cfg.data.vocab_size < 1)
      throw NpyError(dir + ": model.kind = gpt on npy data needs data.vocab_size (the number of token ids)");
    const at::Tensor& x = data.train_inputs;
    if (x.dim() != 2)
      throw NpyError(file("train_inputs.npy") + ": shape " + shape_tuple(x.sizes().vec()) + ", but " + who +
                     " needs token sequences of shape (N, T)");
    // Equal, not just <=: the run counts model.block_size tokens per example
    // (FLOPs, tokens per step), so shorter sequences would be miscounted.
    if (x.size(1) != cfg.model.block_size)
      throw NpyError(file("train_inputs.npy") + ": sequences of " + std::to_string(x.size(1)) +
                     " tokens, but model.block_size = " + std::to_string(cfg.model.block_size) +
                     "; set model.block_size = " + std::to_string(x.size(1)));
    if (data.train_targets.sizes() != x.sizes())
      throw NpyError(file("train_targets.npy") + ": shape " + shape_tuple(data.train_targets.sizes().vec()) + ", but " +
                     who + " needs targets shaped like the inputs " + shape_tuple(x.sizes().vec()) +
                     " (usually the inputs shifted by one)");
    check_npy_token_ids(data, cfg.data.vocab_size, dir);
    return;
  }
  if (kind != "mlp" && kind != "cnn") return;  // torchscript: the module's own contract
  if (data.inputs_dtype != "float32")
    throw NpyError(file("train_inputs.npy") + ": dtype " + data.inputs_dtype + ", but " + who +
                   " needs float32 images (e.g. arr.astype(np.float32) / 255)");
  const at::Tensor& x = data.train_inputs;
  const std::vector<int64_t> image(x.sizes().begin() + 1, x.sizes().end());
  const bool fits = kind == "cnn" ? image == std::vector<int64_t>{1, 28, 28} : x.numel() / x.size(0) == 784;
  if (!fits)
    throw NpyError(file("train_inputs.npy") + ": examples of shape " + shape_tuple(image) + ", but " + who +
                   " needs 28 x 28 images: (N, 1, 28, 28)" + (kind == "mlp" ? " or (N, 784)" : ""));
  if (data.targets_dtype == "float32" || data.train_targets.dim() != 1)
    throw NpyError(file("train_targets.npy") + ": " + data.targets_dtype + " of shape " +
                   shape_tuple(data.train_targets.sizes().vec()) + ", but " + who +
                   " needs one integer class label per example: shape (N)");
  for (const char* name : {"train_targets.npy", "val_targets.npy"}) {
    const at::Tensor& y = std::string(name) == "train_targets.npy" ? data.train_targets : data.val_targets;
    const int64_t lo = y.min().item<int64_t>(), hi = y.max().item<int64_t>();
    if (lo < 0 || hi >= kImageClasses)
      throw NpyError(file(name) + ": label " + std::to_string(lo < 0 ? lo : hi) + " is outside 0.." +
                     std::to_string(kImageClasses - 1) + " (" + who + " has 10 classes)");
  }
}

}  // namespace atl
