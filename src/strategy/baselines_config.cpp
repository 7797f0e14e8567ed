// The baselines' config rules, apart from the strategy's code so that
// validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/baselines.h"

namespace atl {

void validate_ddp(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  // Finite too: a cap is turned into a byte count.
  p.need(c.ddp.bucket_mb > 0 && c.ddp.bucket_mb < 1e9,
         "ddp.bucket_mb must be > 0 MiB (PyTorch's default is 25), got " + std::to_string(c.ddp.bucket_mb));
  p.need(c.ddp.first_bucket_mb > 0 && c.ddp.first_bucket_mb < 1e9,
         "ddp.first_bucket_mb must be > 0 MiB (PyTorch's default is 1), got " + std::to_string(c.ddp.first_bucket_mb));
}

}  // namespace atl
