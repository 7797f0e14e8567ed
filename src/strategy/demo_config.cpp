// DeMo's config rules, apart from the strategy's code so
// that validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/demo.h"

namespace atl {

void validate_demo(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.demo.beta >= 0 && c.demo.beta < 1, "demo.beta must be in [0, 1)");
  p.need(c.demo.topk >= 1, "demo.topk (k) must be >= 1");
  p.need(c.demo.chunk >= 1, "demo.chunk (c) must be >= 1");
  p.enum_check("demo.index_dtype", c.demo.index_dtype, {"int16", "int64"});
  // DeMo is its own optimizer (sign step on decoded momentum): no inner optimizer to swap.
  p.need(c.strategy.name != "demo" || c.optim.name != "muon",
         "optim.name = muon is an inner optimizer; DeMo (strategy.name = demo) takes its own step instead");
  // chunk <= 181 <=> chunk^2 <= 32768, without squaring a huge value (fuzz finding).
  p.need(c.demo.index_dtype != "int16" || c.demo.chunk <= 181,
         "demo.index_dtype = 'int16' holds blocks of at most 32768 entries: demo.chunk must be <= 181");
  p.need(c.demo.weight_decay >= 0, "demo.weight_decay must be >= 0");
}

}  // namespace atl
