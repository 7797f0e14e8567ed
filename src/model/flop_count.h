// A model's training FLOPs counted from what it executes: for a TorchScript
// module, which cannot state them, atoll runs one forward pass of a batch
// and adds up the FLOPs of the products it runs (matrix products,
// convolutions, attention), read from their operands' shapes through ATen's
// RecordFunction callbacks. Training FLOPs are 3 x the forward's (the
// backward computes two products per forward product: the gradient of the
// input and of the weight), the convention behind the built-in models'
// 6 x parameters per token.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "atoll/config.h"
#include "atoll/model.h"

namespace atl {

// FLOPs of products, 2 per multiply-add; elementwise work, reductions and
// normalisations are not counted (they are a few FLOPs per value, next to
// a product's 2 x K).
struct FlopCount {
  double flops = 0;
  std::map<std::string, double> by_op;  // operator ("aten::addmm") -> its FLOPs
};

// Counts the products that ATen operators called on the constructing thread
// run while the counter is alive. A product counts once, at the outermost
// operator that computes it: aten::linear counts its own FLOPs, not again
// those of the aten::addmm it calls; aten::einsum, which is not in the
// table, is counted through the aten::bmm it calls. Operators that other
// threads call (another worker, an intra-op helper running part of a
// kernel) are not counted.
//
// Thread-safety: one counter per thread at a time; count() on the
// constructing thread.
class ProductFlopCounter {
 public:
  ProductFlopCounter();
  ~ProductFlopCounter();
  ProductFlopCounter(const ProductFlopCounter&) = delete;
  ProductFlopCounter& operator=(const ProductFlopCounter&) = delete;
  const FlopCount& count() const;

  struct State;  // what the ATen callbacks add to (flop_count.cpp)

 private:
  std::unique_ptr<State> state_;
  uint64_t handle_ = 0;  // the RecordFunction callback's (at::CallbackHandle)
};

// Training FLOPs (forward + backward) of one example of the batch `x`,
// `y`: 3 x the products of one model.loss(x, y) divided by the batch's
// examples. The pass runs in training mode (the path training takes, not an
// inference fast path) without autograd, on copies of the batch; the
// default generator's state is restored afterwards, so a module's dropout
// draws nothing the run would see, and no parameter or gradient changes.
double count_training_flops_per_example(Model& model, const at::Tensor& x, const at::Tensor& y);

// The training FLOPs a run charges and reports, and where they come from.
struct ModelFlops {
  double per_example = 0;
  double per_token = 0;
  // "formula" (a built-in model's closed form), "model.flops_per_sample"
  // (given by the user) or "counted" (count_training_flops_per_example).
  std::string source;
};
// A built-in model's formula; a TorchScript module's model.flops_per_sample
// when > 0, else the count on the example batch (x, y), which must have the
// shape of the run's examples.
ModelFlops model_training_flops(const ModelConfig& cfg, Model& model, const at::Tensor& x, const at::Tensor& y);

// One line for the terminal: the figure and where it comes from.
std::string describe_model_flops(const ModelFlops& f);

}  // namespace atl
