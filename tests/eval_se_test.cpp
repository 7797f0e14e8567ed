// The evaluation's standard error clustered by document (CR1): the formula
// on hand-made losses, what it corrects when a document's windows agree, and
// which unit a run reports for token data with documents and for images.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "atoll/config.h"
#include "atoll/data.h"
#include "atoll/report.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/data_source.h"
#include "train/evaluation.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

TEST(EvalStandardError, ClusteredByDocumentEqualsTheCr1FormulaComputedByHand) {
  // Losses 1..7, mean 4, in documents {1, 2, 3}, {4, 5}, {6, 7}:
  // S_g - n_g x̄ = 6 - 12 = -6, 9 - 8 = 1, 13 - 8 = 5; their squares sum to
  // 36 + 1 + 25 = 62; G = 3, so se = sqrt(3/2 * 62) / 7 = sqrt(93) / 7.
  const std::vector<double> losses = {1, 2, 3, 4, 5, 6, 7};
  const EvalResult r = summarize_example_losses(losses, 16, {0, 0, 0, 1, 1, 2, 2});
  EXPECT_DOUBLE_EQ(r.loss, 4.0);
  EXPECT_DOUBLE_EQ(r.se, std::sqrt(93.0) / 7.0);
  EXPECT_EQ(r.se_unit, "document");
  EXPECT_EQ(r.se_clusters, 3);
  EXPECT_EQ(r.examples, 7);
  EXPECT_EQ(r.tokens, 7 * 16);
  // Ids are labels, not positions: the same documents interleaved and renamed.
  const EvalResult shuffled = summarize_example_losses({6, 1, 4, 2, 7, 5, 3}, 16, {-3, 9, 40, 9, -3, 40, 9});
  EXPECT_DOUBLE_EQ(shuffled.se, r.se);
  EXPECT_EQ(shuffled.se_clusters, 3);
  // One document, or none given: every example is its own cluster, the
  // plain sd / sqrt(n) (sqrt(0.5) for 1..5, as in evaluation_test.cpp).
  for (const std::vector<int64_t>& docs : {std::vector<int64_t>{4, 4, 4, 4, 4}, std::vector<int64_t>{}}) {
    const EvalResult one = summarize_example_losses({1, 2, 3, 4, 5}, 1, docs);
    EXPECT_DOUBLE_EQ(one.se, std::sqrt(0.5));
    EXPECT_EQ(one.se_unit, "example");
    EXPECT_EQ(one.se_clusters, 5);
  }
  EXPECT_THROW(summarize_example_losses({1, 2, 3}, 1, {0, 1}), std::logic_error);
}

TEST(EvalStandardError, WindowsThatAgreeWithinADocumentAreUnderstatedBySqrtOfWindowsPerDocumentUnlessClustered) {
  // 10 documents of 50 windows each; every window of a document has its
  // document's loss: 500 windows, but only 10 independent figures.
  const int64_t documents = 10, per_document = 50;
  std::vector<double> values, losses;
  std::vector<int64_t> ids;
  for (int64_t g = 0; g < documents; ++g) {
    values.push_back(2.0 + 0.1 * double((g * 7) % documents));  // 2.0 .. 2.9 in a scrambled order
    for (int64_t k = 0; k < per_document; ++k) {
      losses.push_back(values.back());
      ids.push_back(g);
    }
  }
  const EvalResult examples = summarize_example_losses(losses, 1);
  const EvalResult clustered = summarize_example_losses(losses, 1, ids);
  // The clustered one is the standard error of the 10 documents' losses.
  const double of_documents = summarize_example_losses(values, 1).se;
  EXPECT_NEAR(clustered.se, of_documents, 1e-12 * of_documents);
  // The example-level one understates it by sqrt((G m - 1) / (G - 1)),
  // about sqrt(m) = sqrt(50) ~ 7.07 (7.45 here).
  const double ratio = clustered.se / examples.se;
  EXPECT_NEAR(ratio, std::sqrt(double(documents * per_document - 1) / double(documents - 1)), 1e-9);
  EXPECT_GT(ratio, std::sqrt(double(per_document)));
  EXPECT_LT(ratio, 1.1 * std::sqrt(double(per_document)));
}

TEST(EvalStandardError, AFullEvaluationWindowBelongsToTheDocumentItStartsIn) {
  const Config cfg = tiny_config("single", 1);
  const TokenData text = load_token_data(cfg.data.dir, cfg.data.vocab_size);
  ASSERT_EQ(text.val.doc_starts.size(), 2u) << "the tiny corpus has two validation documents";
  const int64_t second = text.val.doc_starts[1], t = cfg.model.block_size;
  ASSERT_NE(second % t, 0) << "one window straddles the two documents";
  const DataSource data(cfg);
  const std::vector<int64_t> docs = data.full_eval_documents();
  ASSERT_EQ(int64_t(docs.size()), data.full_eval_examples());
  for (int64_t i = 0; i < int64_t(docs.size()); ++i)
    EXPECT_EQ(docs[size_t(i)], i * t >= second ? 1 : 0) << "window " << i << " starts at " << i * t;
  // The interim sample's windows are labelled too, one per example.
  EXPECT_EQ(int64_t(data.eval_documents().size()), cfg.train.eval_batches * cfg.train.batch_size);
}

// The MLP on generated 28 x 28 "images" of 10 classes (npy), 40 to evaluate.
Config image_run(const testing::TempDir& dir) {
  const std::string data = dir.path("image_data");
  fs::create_directories(data);
  at::manual_seed(5);
  const at::Tensor w = at::randn({784, 10});
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", 64}, {"val", 40}}) {
    const at::Tensor x = at::rand({n, 1, 28, 28});
    write_npy(data + "/" + split + "_inputs.npy", x);
    write_npy(data + "/" + split + "_targets.npy", (x.reshape({n, 784}) - 0.5).mm(w).argmax(1));
  }
  Config cfg;
  cfg.data.dataset = "npy";
  cfg.data.dir = data;
  cfg.model.kind = "mlp";
  cfg.model.mlp_hidden = 16;
  cfg.train.steps = 4;
  cfg.train.eval_every = 2;
  cfg.train.log_every = 2;
  cfg.train.batch_size = 8;
  cfg.train.eval_batch_size = 16;
  cfg.strategy.name = "single";
  cfg.strategy.workers = 1;
  cfg.run.progress = false;
  return cfg;
}

TEST(EvalStandardError, ARunReportsDocumentForTokenDataWithDocumentsAndExampleForImages) {
  testing::TempDir dir;
  struct Case {
    Config cfg;
    std::string unit;
    int64_t clusters;  // of the final (full) evaluation
  };
  Config text = tiny_config("single", 1);
  text.run.out_dir = dir.str();
  text.run.name = "text";
  Config images = image_run(dir);
  images.run.out_dir = dir.str();
  images.run.name = "images";
  for (const Case& c : {Case{text, "document", 2}, Case{images, "example", 40}}) {
    SCOPED_TRACE(c.cfg.run.name);
    const RunSummary s = train(c.cfg);
    EXPECT_EQ(s.final_val_loss_se_unit, c.unit);
    EXPECT_EQ(s.final_val_loss_se_clusters, c.clusters);
    EXPECT_GT(s.final_val_loss_se, 0);
    // Every evaluation's metrics line (the interim samples too), the end
    // event, summary.json and what the report reads back.
    int evals = 0;
    for (const auto& e : events_of(s)) {
      if (e["event"] == "eval") {
        ++evals;
        EXPECT_EQ(e["val_loss_se_unit"], c.unit) << e.dump();
        EXPECT_GT(e["val_loss_se_clusters"].get<int64_t>(), 1) << e.dump();
      }
      if (e["event"] == "end") {
        EXPECT_EQ(e["final_val_loss_se_unit"], c.unit);
      }
    }
    EXPECT_EQ(evals, 3);  // steps 0, 2 (or 10) and the last
    const std::string folder = dir.path(c.cfg.run.name);
    const auto summary = nlohmann::json::parse(testing::read_text(folder + "/summary.json"));
    EXPECT_EQ(summary["final_val_loss_se_unit"], c.unit);
    EXPECT_EQ(summary["final_val_loss_se_clusters"].get<int64_t>(), c.clusters);
    EXPECT_EQ(load_run(folder).final_val_loss_se_unit, c.unit);
  }
}

}  // namespace
}  // namespace atl
