#include <stdexcept>

#include "atoll/strategy.h"
#include "strategy/baselines.h"
#include "strategy/demo.h"
#include "strategy/diloco.h"
#include "strategy/noloco.h"
#include "strategy/palsgd.h"
#include "strategy/sparta.h"
#include "strategy/streaming.h"

namespace atl {

std::unique_ptr<Strategy> make_strategy(const Config& cfg, std::vector<at::Tensor> params,
                                        Communicator& comm, const std::vector<std::string>& names) {
  const std::string& name = cfg.strategy.name;
  if (name == "single") return std::make_unique<SingleStrategy>(cfg, std::move(params));
  if (name == "ddp") return std::make_unique<DdpStrategy>(cfg, std::move(params), comm);
  if (name == "localsgd") return std::make_unique<LocalSgdStrategy>(cfg, std::move(params), comm);
  if (name == "diloco") return std::make_unique<DiLoCoStrategy>(cfg, std::move(params), comm);
  if (name == "sparta") return std::make_unique<SpartaStrategy>(cfg, std::move(params), comm);
  if (name == "sparta_diloco") return std::make_unique<SpartaDiLoCoStrategy>(cfg, std::move(params), comm);
  if (name == "noloco") return std::make_unique<NoLoCoStrategy>(cfg, std::move(params), comm);
  if (name == "palsgd") return std::make_unique<PalsgdStrategy>(cfg, std::move(params), comm);
  if (name == "demo") return std::make_unique<DemoStrategy>(cfg, std::move(params), comm);
  if (name == "streaming") return std::make_unique<StreamingDiLoCoStrategy>(cfg, std::move(params), comm, names);
  throw std::invalid_argument("strategy.name = '" + name +
                              "': allowed values are single | ddp | localsgd | diloco | sparta | "
                              "sparta_diloco | noloco | palsgd | demo | streaming");
}

}  // namespace atl
