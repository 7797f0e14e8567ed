#include "train/evaluation.h"

#include <ATen/ATen.h>

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "train/threads.h"

namespace atl {

EvalResult summarize_example_losses(const std::vector<double>& losses, int64_t tokens_per_example,
                                    const std::vector<int64_t>& documents) {
  EvalResult r;
  const int64_t n = static_cast<int64_t>(losses.size());
  if (!documents.empty() && documents.size() != losses.size())
    throw std::logic_error("summarize_example_losses: " + std::to_string(documents.size()) + " document ids for " +
                           std::to_string(n) + " losses");
  r.examples = n;
  r.tokens = n * tokens_per_example;
  r.se_clusters = n;
  if (n == 0) return r;
  // Two passes: the mean first, then squared deviations from it, so a
  // small spread around a large mean loses no digits.
  double sum = 0;
  for (double l : losses) sum += l;
  r.loss = sum / double(n);
  // Per document, the sum of its deviations from the mean: S_g - n_g x̄,
  // summed as deviations for the same reason. std::map: a fixed order.
  std::map<int64_t, double> deviation;
  for (size_t i = 0; i < documents.size(); ++i) deviation[documents[i]] += losses[i] - r.loss;
  const int64_t g = static_cast<int64_t>(deviation.size());
  if (g >= 2) {
    double squares = 0;
    for (const auto& [doc, d] : deviation) squares += d * d;
    r.se = std::sqrt(double(g) / double(g - 1) * squares) / double(n);
    r.se_unit = "document";
    r.se_clusters = g;
    return r;
  }
  // Every example its own cluster: the formula above reduces to sd / sqrt(n),
  // computed as it always was, so these figures keep their bits.
  if (n < 2) return r;
  double squares = 0;
  for (double l : losses) squares += (l - r.loss) * (l - r.loss);
  r.se = std::sqrt(squares / double(n - 1)) / std::sqrt(double(n));
  return r;
}

EvalResult evaluate_batches(Model& model, const BatchSource& next, std::vector<double>* per_example) {
  // No graph is built: evaluation keeps no activations for a backward pass
  // and leaves the parameters' gradients as they were. Inference mode also
  // skips the version counters and view tracking autograd would need.
  c10::InferenceMode no_autograd;
  const bool was_training = model.is_training();
  model.eval();
  std::vector<double> losses;
  std::pair<at::Tensor, at::Tensor> batch;
  // A classifier says so on every batch; one batch without gives no accuracy.
  int64_t correct = 0;
  bool classified = true;
  while (next(batch)) {
    const Model::ExampleScores scores = model.example_scores(batch.first, batch.second);
    const at::Tensor l = scores.losses.to(at::kDouble).contiguous();  // (B)
    if (l.dim() != 1 || l.size(0) != batch.first.size(0))
      throw std::logic_error("example_losses returned " + std::to_string(l.numel()) + " values for a batch of " +
                             std::to_string(batch.first.size(0)));
    const double* p = l.data_ptr<double>();
    losses.insert(losses.end(), p, p + l.numel());
    classified = classified && scores.correct.defined() && scores.correct.numel() == l.numel();
    if (classified) correct += scores.correct.sum().item<int64_t>();
  }
  model.train(was_training);
  EvalResult r = summarize_example_losses(losses, model.tokens_per_example());
  if (classified && r.examples > 0) {
    r.correct = correct;
    r.accuracy = double(correct) / double(r.examples);
  }
  if (per_example) *per_example = std::move(losses);
  return r;
}

EvalResult evaluate_batches_parallel(const std::vector<Model*>& models,
                                     const std::vector<std::pair<at::Tensor, at::Tensor>>& batches,
                                     std::vector<double>* per_example, const std::vector<int64_t>& documents) {
  if (models.empty()) throw std::logic_error("evaluate_batches_parallel needs at least one model");
  const size_t threads = std::max<size_t>(1, std::min(models.size(), batches.size()));
  std::vector<std::vector<double>> losses(batches.size());
  std::vector<int64_t> correct(batches.size(), -1);  // per batch; -1: not a classifier
  std::vector<std::exception_ptr> errors(threads);
  const int64_t caller_threads = compute_threads();
  auto share = [&](size_t t) {
    try {
      set_compute_threads(1);
      for (size_t i = t; i < batches.size(); i += threads) {
        size_t given = 0;
        correct[i] = evaluate_batches(
                         *models[t],
                         [&](std::pair<at::Tensor, at::Tensor>& b) {
                           if (given++ > 0) return false;
                           b = batches[i];
                           return true;
                         },
                         &losses[i])
                         .correct;
      }
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(share, t);
  share(0);
  for (auto& h : helpers) h.join();
  set_compute_threads(caller_threads);
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<double> all;
  for (const auto& l : losses) all.insert(all.end(), l.begin(), l.end());
  EvalResult r = summarize_example_losses(all, models[0]->tokens_per_example(), documents);
  const bool classified = std::all_of(correct.begin(), correct.end(), [](int64_t c) { return c >= 0; });
  if (!batches.empty() && r.examples > 0 && classified) {
    r.correct = 0;
    for (int64_t c : correct) r.correct += c;
    r.accuracy = double(r.correct) / double(r.examples);
  }
  if (per_example) *per_example = std::move(all);
  return r;
}

}  // namespace atl
