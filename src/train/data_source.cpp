#include "train/data_source.h"
#include "train/npy_fit.h"
#include "util/rng.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <stdexcept>
#include <utility>

namespace atl {
namespace {

// Token chunk dealt to workers by the iid shard: a few windows long, so each
// worker sees text from all over the corpus.
constexpr int64_t kIidChunkTokens = 4096;

// A batch sampler (TokenBatchSampler, MnistBatchSampler, NpyBatchSampler:
// next(B, x, y), state(), set_state()) as a worker's stream.
template <typename Sampler>
class SamplerStream : public DataSource::Stream {
 public:
  template <typename... Args>
  explicit SamplerStream(Args&&... args) : sampler_(std::forward<Args>(args)...) {}
  Batch next(int64_t batch_size) override {
    Batch b;
    sampler_.next(batch_size, b.first, b.second);
    return b;
  }
  uint64_t position() const override { return sampler_.state(); }
  void seek(uint64_t position) override { sampler_.set_state(position); }

 private:
  Sampler sampler_;
};

// npy validation examples [start, start + m), integers as int64.
Batch npy_batch(const NpyData& data, int64_t start, int64_t m) {
  return {npy_as_batch(data.val_inputs.narrow(0, start, m)), npy_as_batch(data.val_targets.narrow(0, start, m))};
}

// MNIST test images [start, start + m): (m, 1, 28, 28) floats in [0, 1] and (m) labels.
Batch mnist_batch(const MnistSplit& split, int64_t start, int64_t m) {
  at::Tensor x = at::from_blob(const_cast<uint8_t*>(split.images.data()) + start * 784, {m, 1, 28, 28}, at::kByte)
                     .to(at::kFloat)
                     .div_(255.0);
  at::Tensor y = at::from_blob(const_cast<uint8_t*>(split.labels.data()) + start, {m}, at::kByte).to(at::kLong);
  return {x, y};
}

}  // namespace

std::string data_dir(const DataConfig& cfg) {
  if (!cfg.dir.empty()) return cfg.dir;
  return (std::filesystem::path(cfg.data_root) / cfg.dataset).string();
}

DataSource::DataSource(const Config& cfg) : cfg_(cfg) {
  const std::string dir = data_dir(cfg.data);
  if (!std::filesystem::exists(dir)) {
    throw std::runtime_error("data folder '" + dir + "' does not exist: run scripts/setup to prepare the " +
                             "shipped data sets, or `atoll prepare text FILE OUT` for your own text");
  }
  const uint64_t eval_seed = mix_seed(static_cast<uint64_t>(cfg.run.seed), 0xe7a1u);
  if (cfg.data.dataset == "mnist") {
    mnist_ = std::make_shared<MnistData>(load_mnist(dir));
    vocab_size_ = 10;
    // The whole test split, in fixed batches of train.batch_size.
    const int64_t n = mnist_->test.size(), bs = std::max<int64_t>(cfg.train.batch_size, 1);
    for (int64_t start = 0; start < n && int64_t(eval_batches_.size()) < cfg.train.eval_batches; start += bs) {
      eval_batches_.push_back(mnist_batch(mnist_->test, start, std::min(bs, n - start)));
    }
    return;
  }
  if (cfg.data.dataset == "npy") {
    npy_ = std::make_shared<NpyData>(load_npy_data(dir));
    check_npy_fits_model(*npy_, cfg, dir);
    vocab_size_ = npy_vocab_size(cfg);
    // Like MNIST: the first batches of the validation split, in order.
    const int64_t n = npy_->val_size(), bs = std::max<int64_t>(cfg.train.batch_size, 1);
    for (int64_t start = 0; start < n && int64_t(eval_batches_.size()) < cfg.train.eval_batches; start += bs) {
      eval_batches_.push_back(npy_batch(*npy_, start, std::min(bs, n - start)));
    }
    return;
  }
  text_ = std::make_shared<TokenData>(load_token_data(dir, cfg.data.vocab_size));
  vocab_size_ = text_->vocab_size;
  std::vector<int64_t> starts;
  for (auto& b : fixed_token_batches(text_->val, cfg.model.block_size, cfg.train.batch_size, cfg.train.eval_batches,
                                     eval_seed, &starts))
    eval_batches_.push_back(b);
  for (int64_t start : starts) eval_documents_.push_back(document_of(text_->val, start));
  if (cfg.train.final_eval == "full" && full_eval_examples() == 0)
    throw std::runtime_error("train.final_eval = 'full': the validation split of '" + dir + "' has " +
                             std::to_string(text_->val.tokens.size()) + " tokens, fewer than one window of " +
                             "model.block_size + 1 = " + std::to_string(cfg.model.block_size + 1) +
                             "; lower model.block_size or use train.final_eval = 'sample'");
}

int64_t DataSource::full_eval_examples() const {
  if (mnist_) return mnist_->test.size();
  if (npy_) return npy_->val_size();
  // A window of T inputs needs T + 1 tokens; windows start every T tokens.
  const int64_t n = static_cast<int64_t>(text_->val.tokens.size());
  return n > 1 ? (n - 1) / cfg_.model.block_size : 0;
}

Batch DataSource::full_eval_batch(int64_t first, int64_t count) const {
  const int64_t total = full_eval_examples();
  if (first < 0 || count < 1 || first + count > total)
    throw std::out_of_range("full evaluation examples [" + std::to_string(first) + ", " +
                            std::to_string(first + count) + ") are outside [0, " + std::to_string(total) + ")");
  if (mnist_) return mnist_batch(mnist_->test, first, count);
  if (npy_) return npy_batch(*npy_, first, count);
  const int64_t t = cfg_.model.block_size;
  Batch b{at::empty({count, t}, at::kLong), at::empty({count, t}, at::kLong)};  // (count, T) each
  int64_t* xp = b.first.data_ptr<int64_t>();
  int64_t* yp = b.second.data_ptr<int64_t>();
  const uint16_t* tokens = text_->val.tokens.data() + first * t;
  for (int64_t i = 0; i < count * t; ++i) {
    xp[i] = tokens[i];
    yp[i] = tokens[i + 1];
  }
  return b;
}

std::vector<int64_t> DataSource::full_eval_documents() const {
  std::vector<int64_t> out;
  if (!text_) return out;
  const int64_t windows = full_eval_examples();
  out.reserve(static_cast<size_t>(windows));
  for (int64_t i = 0; i < windows; ++i) out.push_back(document_of(text_->val, i * cfg_.model.block_size));
  return out;
}

int64_t DataSource::train_tokens() const {
  if (npy_) return npy_->train_size() * tokens_per_example();
  return text_ ? static_cast<int64_t>(text_->train.tokens.size()) : mnist_->train.size();
}

int64_t DataSource::tokens_per_example() const {
  if (mnist_) return 1;
  if (npy_) return npy_->train_targets.numel() / npy_->train_size();  // load_npy_data: size >= 1
  return cfg_.model.block_size;
}

std::unique_ptr<DataSource::Stream> DataSource::stream(int64_t worker, int64_t workers, uint64_t seed) const {
  const uint64_t shard_seed = static_cast<uint64_t>(cfg_.run.seed);  // same on all workers
  if (mnist_) {
    return std::make_unique<SamplerStream<MnistBatchSampler>>(
        mnist_->train, mnist_shard(mnist_->train, worker, workers, cfg_.data.shard, shard_seed), seed);
  }
  if (npy_) {
    return std::make_unique<SamplerStream<NpyBatchSampler>>(
        *npy_, npy_shard(*npy_, worker, workers, cfg_.data.shard, shard_seed), seed);
  }
  return std::make_unique<SamplerStream<TokenBatchSampler>>(
      text_->train, shard_ranges(text_->train, worker, workers, cfg_.data.shard, shard_seed, kIidChunkTokens),
      cfg_.model.block_size, seed);
}

namespace {

// Device `device` of an island: draws the island's batch of D x B and keeps
// rows [device * B, (device + 1) * B). Every device of the island draws the
// same batch (same stream, same seed), so together they cover it exactly.
class DeviceSliceStream final : public DataSource::Stream {
 public:
  DeviceSliceStream(std::unique_ptr<DataSource::Stream> island, int64_t device, int64_t devices)
      : island_(std::move(island)), device_(device), devices_(devices) {}
  Batch next(int64_t batch_size) override {
    Batch all = island_->next(batch_size * devices_);
    return {all.first.narrow(0, device_ * batch_size, batch_size).contiguous(),
            all.second.narrow(0, device_ * batch_size, batch_size).contiguous()};
  }
  uint64_t position() const override { return island_->position(); }
  void seek(uint64_t position) override { island_->seek(position); }

 private:
  std::unique_ptr<DataSource::Stream> island_;
  int64_t device_, devices_;
};

}  // namespace

std::unique_ptr<DataSource::Stream> DataSource::device_stream(std::unique_ptr<Stream> island, int64_t device,
                                                              int64_t devices) {
  if (devices < 1 || device < 0 || device >= devices)
    throw std::invalid_argument("device_stream: device " + std::to_string(device) + " of " + std::to_string(devices) +
                                " devices");
  if (devices == 1) return island;
  return std::make_unique<DeviceSliceStream>(std::move(island), device, devices);
}

}  // namespace atl
