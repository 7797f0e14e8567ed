// NumPy data sets (data.dataset = "npy"): a folder of four .npy files
// loaded and checked together, per-worker shards and the batch sampler.
#include "atoll/data.h"
#include "data/index_shard.h"
#include "util/format.h"
#include "util/rng.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>

#include <algorithm>
#include <filesystem>

namespace atl {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFiles[] = {"train_inputs.npy", "train_targets.npy", "val_inputs.npy", "val_targets.npy"};
constexpr const char* kFolderHolds =
    "an npy data folder holds train_inputs.npy, train_targets.npy, val_inputs.npy and val_targets.npy "
    "(dim 0 of each indexes the examples; docs/PYTORCH.md)";

bool is_integer(const at::Tensor& t) { return t.scalar_type() != at::kFloat; }

// The first example (index along dim 0) holding a value outside [0, vocab),
// or -1. The whole-tensor min and max decide without a copy; only a file at
// fault is searched row by row.
int64_t first_out_of_range(const at::Tensor& t, int64_t vocab) {
  if (t.min().item<int64_t>() >= 0 && t.max().item<int64_t>() < vocab) return -1;
  const at::Tensor v = t.to(at::kLong).reshape({t.size(0), -1});   // (N, values per example)
  const at::Tensor bad = v.lt(0).logical_or_(v.ge(vocab)).any(1);  // (N)
  return bad.nonzero().select(0, 0).item<int64_t>();
}

}  // namespace

NpyData load_npy_data(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw NpyError(dir + ": no such folder; " + kFolderHolds);
  std::string missing;
  for (const char* name : kFiles)
    if (!fs::exists(fs::path(dir) / name, ec)) missing += std::string(missing.empty() ? "" : ", ") + name;
  if (!missing.empty()) throw NpyError(dir + ": missing " + missing + "; " + kFolderHolds);

  NpyArray arrays[4];
  for (int i = 0; i < 4; ++i) arrays[i] = read_npy((fs::path(dir) / kFiles[i]).string());
  auto path = [&](int i) { return (fs::path(dir) / kFiles[i]).string(); };

  for (int split = 0; split < 2; ++split) {
    const int in = 2 * split, tg = 2 * split + 1;
    const int64_t n_in = arrays[in].shape[0], n_tg = arrays[tg].shape[0];
    if (n_in != n_tg)
      throw NpyError(path(tg) + ": mismatched lengths: " + std::to_string(n_tg) + " targets but " + kFiles[in] +
                     " holds " + std::to_string(n_in) + " examples (dim 0 of inputs and targets must agree)");
    if (n_in == 0)
      throw NpyError(path(in) + ": the " + (split == 0 ? "training" : "validation") + " split is empty (shape " +
                     shape_tuple(arrays[in].shape) + ")");
    for (int k : {in, tg}) {
      const auto& shape = arrays[k].shape;
      if (std::find(shape.begin() + 1, shape.end(), 0) != shape.end())
        throw NpyError(path(k) + ": examples hold no values (shape " + shape_tuple(arrays[k].shape) + ")");
    }
  }
  // Validation examples must be what the model trains on: same per-example
  // shape and dtype as the training split.
  for (int k : {0, 1}) {
    const NpyArray& train = arrays[k];
    const NpyArray& val = arrays[k + 2];
    const std::vector<int64_t> train_rest(train.shape.begin() + 1, train.shape.end());
    const std::vector<int64_t> val_rest(val.shape.begin() + 1, val.shape.end());
    if (train_rest != val_rest)
      throw NpyError(path(k + 2) + ": examples of shape " + shape_tuple(val_rest) + " but " + kFiles[k] +
                     " has examples of shape " + shape_tuple(train_rest) +
                     "; train and val must have the same per-example shape");
    if (train.dtype != val.dtype)
      throw NpyError(path(k + 2) + ": dtype " + val.dtype + " but " + kFiles[k] + " is " + train.dtype +
                     "; train and val must have the same dtype");
  }
  NpyData out;
  out.inputs_dtype = arrays[0].dtype;
  out.targets_dtype = arrays[1].dtype;
  out.train_inputs = std::move(arrays[0].values);
  out.train_targets = std::move(arrays[1].values);
  out.val_inputs = std::move(arrays[2].values);
  out.val_targets = std::move(arrays[3].values);
  return out;
}

void check_npy_token_ids(const NpyData& data, int64_t vocab_size, const std::string& dir) {
  const at::Tensor* tensors[] = {&data.train_inputs, &data.train_targets, &data.val_inputs, &data.val_targets};
  for (int i = 0; i < 4; ++i) {
    const std::string file = (fs::path(dir) / kFiles[i]).string();
    const std::string& dtype = i % 2 == 0 ? data.inputs_dtype : data.targets_dtype;
    if (!is_integer(*tensors[i]))
      throw NpyError(file + ": holds " + dtype +
                     " values, but token ids must be integers (int64, int32, "
                     "uint16 or uint8)");
    const int64_t bad = first_out_of_range(*tensors[i], vocab_size);
    if (bad >= 0) {
      const at::Tensor row = tensors[i]->select(0, bad).to(at::kLong).reshape({-1});
      const int64_t lo = row.min().item<int64_t>(), hi = row.max().item<int64_t>();
      throw NpyError(file + ": example " + std::to_string(bad) + " holds token id " + std::to_string(lo < 0 ? lo : hi) +
                     ", outside [0, data.vocab_size = " + std::to_string(vocab_size) + ")");
    }
  }
}

at::Tensor npy_as_batch(const at::Tensor& values) {
  const auto dtype = is_integer(values) ? at::kLong : at::kFloat;
  return values.to(dtype, /*non_blocking=*/false, /*copy=*/true, at::MemoryFormat::Contiguous);
}

std::vector<int64_t> npy_shard(const NpyData& data, int64_t worker, int64_t workers, const std::string& mode,
                               uint64_t seed) {
  const int64_t n = data.train_size();
  if (workers >= 1 && n < workers)
    throw std::invalid_argument("npy data: " + std::to_string(n) + " training examples cannot give each of " +
                                std::to_string(workers) + " workers one; use fewer workers");
  // Labels for noniid: only when the targets are one integer per example.
  std::vector<int64_t> labels;
  const at::Tensor& y = data.train_targets;
  const bool one_per_example = y.dim() == 1 || (y.dim() == 2 && y.size(1) == 1);
  if (mode == "noniid" && one_per_example && is_integer(y)) {
    const at::Tensor flat = y.to(at::kLong).reshape({n}).contiguous();
    const int64_t* p = flat.data_ptr<int64_t>();
    labels.assign(p, p + n);
  }
  return shard_indices(n, labels, worker, workers, mode, seed);
}

NpyBatchSampler::NpyBatchSampler(const NpyData& data, std::vector<int64_t> indices, uint64_t seed)
    : data_(data), indices_(std::move(indices)), state_(seed) {
  if (indices_.empty()) throw std::invalid_argument("npy shard is empty; use fewer workers");
  const int64_t n = data_.train_size();
  for (int64_t i : indices_)
    if (i < 0 || i >= n)
      throw std::invalid_argument("npy example index " + std::to_string(i) + " is outside 0.." + std::to_string(n - 1));
}

void NpyBatchSampler::next(int64_t batch_size, at::Tensor& x, at::Tensor& y) {
  if (batch_size < 1) throw std::invalid_argument("batch_size must be >= 1, got " + std::to_string(batch_size));
  at::Tensor rows = at::empty({batch_size}, at::kLong);  // (B) example indices
  int64_t* r = rows.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch_size; ++b) r[b] = indices_[splitmix64(state_) % indices_.size()];
  // index_select copies the rows, so the batch owns its memory.
  x = at::index_select(data_.train_inputs, 0, rows);   // (B, inputs' per-example dims...)
  y = at::index_select(data_.train_targets, 0, rows);  // (B, targets' per-example dims...)
  if (is_integer(x)) x = x.to(at::kLong);
  if (is_integer(y)) y = y.to(at::kLong);
}

}  // namespace atl
