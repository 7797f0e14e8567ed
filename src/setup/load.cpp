// load_config(): a config read (config area) and checked by every area
// (validate.cpp), parse and value problems reported together so one run of
// the command shows everything to fix, overrides the chosen method does not
// read among them (overrides.cpp).
#include "atoll/setup.h"

namespace atl {

Config load_config(const std::string& path, const std::vector<std::string>& overrides, OverrideCheck check) {
  std::vector<std::string> errors;
  Config cfg = read_config(path, overrides, errors);
  for (auto& e : validate(cfg)) errors.push_back(std::move(e));
  if (check == OverrideCheck::kChosenMethod) check_overrides_read(cfg, overrides, errors);
  throw_if_errors(errors);
  return cfg;
}

}  // namespace atl
