// make_strategy(): the constructor column of the strategy table
// (methods.def). Apart from the rules (table.cpp) so that validate() and the
// config fuzzer link the table without the strategies' code.
#include <stdexcept>
#include <type_traits>

#include "atoll/strategy.h"
#include "strategy/all_methods.h"
#include "strategy/table.h"

namespace atl {
namespace {

// Builds a T from make_strategy's arguments, passing those its constructor takes.
template <class T>
std::unique_ptr<Strategy> make(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names) {
  if constexpr (std::is_constructible_v<T, const Config&, std::vector<at::Tensor>, Communicator&,
                                        const std::vector<std::string>&>) {
    return std::make_unique<T>(cfg, std::move(params), comm, names);
  } else if constexpr (std::is_constructible_v<T, const Config&, std::vector<at::Tensor>, Communicator&>) {
    (void)names;
    return std::make_unique<T>(cfg, std::move(params), comm);
  } else {
    (void)comm;
    return std::make_unique<T>(cfg, std::move(params), names);
  }
}

}  // namespace

std::unique_ptr<Strategy> make_strategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                                        const std::vector<std::string>& names) {
  const std::string& name = cfg.strategy.name;
#define ATOLL_METHOD(method_name, traits, warmup_key, validate, cls, codec_keys, reads) \
  if (name == method_name) return make<cls>(cfg, std::move(params), comm, names);
#include "strategy/methods.def"
#undef ATOLL_METHOD
  throw std::invalid_argument("strategy.name = '" + name + "': allowed values are " + strategy_choices());
}

}  // namespace atl
