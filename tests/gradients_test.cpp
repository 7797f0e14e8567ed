// A lone worker's batch cut into micro-batches on threads gives the whole
// batch's loss and gradient (to float rounding), the same bits every time,
// and is used only where threads cannot change the arithmetic's inputs.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "atoll/model.h"
#include "tiny_data.h"
#include "train/data_source.h"
#include "train/gradients.h"

namespace atl {
namespace {

struct Step {
  double loss = 0;
  std::vector<at::Tensor> grads;
};

Step step(const Config& cfg, const Batch& batch, int64_t micro, int64_t vocab) {
  auto model = make_model(cfg.model, vocab, 5);
  const auto params = model->parameters();
  Step s;
  s.loss = forward_backward(*model, params, batch, cfg.train.precision, micro).item<double>();
  for (const auto& p : params) s.grads.push_back(p.grad().clone());
  return s;
}

TEST(Gradients, TwoMicroBatchesOnTwoThreadsGiveTheWholeBatchsLossAndGradientAndTheSameBitsEachTime) {
  Config cfg = tiny_config("single", 1);
  cfg.train.batch_size = 7;  // uneven halves: 3 and 4 examples
  DataSource data(cfg);
  const Batch batch = data.stream(0, 1, 9)->next(cfg.train.batch_size);
  const Step whole = step(cfg, batch, 1, data.vocab_size());
  const Step split = step(cfg, batch, 2, data.vocab_size()), again = step(cfg, batch, 2, data.vocab_size());
  EXPECT_NEAR(split.loss, whole.loss, 1e-6);
  EXPECT_EQ(split.loss, again.loss);
  ASSERT_EQ(split.grads.size(), whole.grads.size());
  for (size_t k = 0; k < whole.grads.size(); ++k) {
    EXPECT_TRUE(at::allclose(split.grads[k], whole.grads[k], 1e-4, 1e-6)) << "parameter " << k;
    EXPECT_TRUE(at::equal(split.grads[k], again.grads[k])) << "parameter " << k;
  }
}

TEST(Gradients, OnlyBuiltInModelsWithoutDropoutAreCutAndNeverIntoMorePiecesThanExamples) {
  ModelConfig m;
  EXPECT_EQ(micro_batches(m, 32, 1), 1);
  EXPECT_EQ(micro_batches(m, 32, 2), 2);
  EXPECT_EQ(micro_batches(m, 3, 8), 3);
  m.dropout = 0.1;
  EXPECT_EQ(micro_batches(m, 32, 2), 1);
  m.dropout = 0;
  m.kind = "torchscript";
  EXPECT_EQ(micro_batches(m, 32, 2), 1);
}

}  // namespace
}  // namespace atl
