// Loads the configured data set once and hands each worker its own batch
// stream (its shard) plus the fixed evaluation batches.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <utility>
#include <vector>

#include "atoll/config.h"
#include "atoll/data.h"

namespace atl {

using Batch = std::pair<at::Tensor, at::Tensor>;  // (inputs, targets)

// Immutable after construction; shared read-only by worker threads.
class DataSource {
 public:
  explicit DataSource(const Config& cfg);
  // Token ids (gpt), or classes: 10 for MNIST and for npy data with mlp/cnn;
  // data.vocab_size for other npy data (0 when not set).
  int64_t vocab_size() const { return vocab_size_; }
  // Tokens in the whole training split: text tokens, MNIST images, or npy
  // examples x tokens_per_example().
  int64_t train_tokens() const;
  // Tokens one example holds: model.block_size for text, 1 for MNIST, the
  // number of target values per example for npy data (1 for class labels,
  // T for (N, T) token targets).
  int64_t tokens_per_example() const;

  // One worker's batch stream; owned by that worker's thread.
  class Stream {
   public:
    virtual ~Stream() = default;
    virtual Batch next(int64_t batch_size) = 0;
    // Checkpoints: the position in the stream.
    virtual uint64_t position() const = 0;
    virtual void seek(uint64_t position) = 0;
  };
  std::unique_ptr<Stream> stream(int64_t worker, int64_t workers, uint64_t seed) const;
  // Islands: device `device` of `devices` reading its island's stream. Each
  // next(B) takes the island's next D x B examples and keeps the device's B
  // rows, so an island of D devices sees what one device of batch D x B would.
  static std::unique_ptr<Stream> device_stream(std::unique_ptr<Stream> island, int64_t device, int64_t devices);
  // The fixed sample the interim evaluations use: train.eval_batches
  // batches of train.batch_size (MNIST and npy: the first ones of the
  // validation split, in order; text: windows drawn once with a fixed seed).
  const std::vector<Batch>& eval_batches() const { return eval_batches_; }
  // The document each example of eval_batches() starts in (in order, batch
  // by batch): an index into the validation split's document starts; empty
  // for data without documents (MNIST, npy). Text without meta.json's
  // val_docs is one document.
  const std::vector<int64_t>& eval_documents() const { return eval_documents_; }
  // The full evaluation: every non-overlapping window of model.block_size
  // tokens in the validation split (targets: the window shifted by one, so
  // the last window ends at the split's second-to-last token), every image
  // of the MNIST test split, or every npy validation example, in fixed order.
  int64_t full_eval_examples() const;
  // Examples [first, first + count) of the full evaluation: (count, T)
  // inputs and targets, or (count, 1, 28, 28) images and (count) labels, or
  // npy rows [first, first + count) (integers as int64).
  Batch full_eval_batch(int64_t first, int64_t count) const;
  // The document each of the full evaluation's examples starts in, as
  // eval_documents() (full_eval_examples() of them; empty without documents).
  std::vector<int64_t> full_eval_documents() const;

 private:
  Config cfg_;
  std::shared_ptr<TokenData> text_;
  std::shared_ptr<MnistData> mnist_;
  std::shared_ptr<NpyData> npy_;
  int64_t vocab_size_ = 0;
  std::vector<Batch> eval_batches_;
  std::vector<int64_t> eval_documents_;
};

// The folder a data set is read from: data.dir, or <data_root>/<dataset>.
std::string data_dir(const DataConfig& cfg);

}  // namespace atl
