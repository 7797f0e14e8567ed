// Evaluating a model: the mean loss over a set of examples and its standard
// error, and a classifier's accuracy, computed without autograd.
//
// The unit of the standard error is never the token: the tokens of one
// window are strongly correlated, so treating them as independent would
// understate the error. Every GPT window has the same length, so the mean of
// the window means equals the mean over every evaluated token.
//
// For token data with document starts (meta.json's val_docs) the windows of
// one document are correlated too (the full evaluation of Brown takes ~4,700
// windows from 25 documents), so the standard error is clustered by
// document (CR1): with G documents, n windows, mean x̄, S_g the sum of
// document g's window losses and n_g their count,
//   se = sqrt( G/(G-1) * Σ_g (S_g − n_g x̄)² ) / n.
// A window belongs to the document it starts in. Both the full evaluation
// (window i starts at i * block_size) and the interim ones (their fixed
// windows' starts are kept when they are drawn, DataSource::eval_documents)
// know each window's document. With fewer than two documents, or data
// without document boundaries (MNIST images, npy rows), every example is its
// own cluster, and the same formula is the plain sd / sqrt(n).
//
// Thread-safety: evaluate_batches uses `model` exclusively while it runs.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "atoll/model.h"

namespace atl {

struct EvalResult {
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean over every evaluated token (image)
  // Standard error of that mean, clustered by document (above) or over
  // examples (sample sd (n - 1) / sqrt(n)); NaN with fewer than two examples.
  double se = std::numeric_limits<double>::quiet_NaN();
  // What `se` treats as independent: "document" or "example"; and how many
  // of them there were (G; `examples` for "example").
  std::string se_unit = "example";
  int64_t se_clusters = 0;
  int64_t examples = 0;  // windows (images) evaluated
  int64_t tokens = 0;    // examples * tokens per example
  // Classifiers (Model::example_scores gives `correct`): the examples whose
  // highest logit is their label, and their share of `examples`; -1 and NaN
  // for every other model.
  int64_t correct = -1;
  double accuracy = std::numeric_limits<double>::quiet_NaN();
};

// Mean and standard error of per-example losses, in float64. `documents`,
// if not empty, holds example i's document id (any integers; equal ids are
// one document) for every example: the standard error is then clustered by
// document when there are at least two documents. Throws std::logic_error
// when its size is not the number of losses.
EvalResult summarize_example_losses(const std::vector<double>& losses, int64_t tokens_per_example,
                                    const std::vector<int64_t>& documents = {});

// Evaluates `model` in eval mode, with autograd off, on the batches `next`
// fills in ((inputs, targets) as Model::loss takes them) until it returns
// false. `per_example`, if given, receives every example's loss in order.
using BatchSource = std::function<bool(std::pair<at::Tensor, at::Tensor>&)>;
EvalResult evaluate_batches(Model& model, const BatchSource& next, std::vector<double>* per_example = nullptr);

// The same over `batches`, on one thread per model (every model holding the
// same parameters; models.size() >= 1): batch i goes to thread i mod n, each
// thread with one BLAS thread, and the losses come back in batch order, so
// the result does not depend on how many threads there were. The calling
// thread's BLAS thread count is restored afterwards. Used while the workers
// are parked, so their cores would otherwise idle. `documents`: as for
// summarize_example_losses, one id per example of `batches` in order.
EvalResult evaluate_batches_parallel(const std::vector<Model*>& models,
                                     const std::vector<std::pair<at::Tensor, at::Tensor>>& batches,
                                     std::vector<double>* per_example = nullptr,
                                     const std::vector<int64_t>& documents = {});

}  // namespace atl
