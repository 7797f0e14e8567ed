// Faults declared in [faults], as the pseudo-gradient methods see them:
// which workers are away, whose contribution is lost, who sends garbage.
// A pure function of the config and the step, so every rank agrees on it
// without a message (the coins of faults.drop_prob come from (run seed,
// worker, step)).
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

class FaultPlan {
 public:
  explicit FaultPlan(const Config& cfg);
  // Any fault or robust-aggregation option set: OuterSync then takes its
  // fault-aware path (otherwise the plain path runs, bit for bit as before).
  bool active() const { return active_; }
  bool absent(int64_t worker, int64_t t) const;
  // Workers that come back at step t (away at t - 1, present at t).
  std::vector<int64_t> joiners(int64_t t) const;
  // Whether worker's pseudo-gradient of the sync at step t is lost (q).
  bool dropped(int64_t worker, int64_t t) const;
  // "" or the corruption (nan | inf | scale) worker sends at step t.
  std::string corruption(int64_t worker, int64_t t) const;

 private:
  std::vector<FaultWindow> absent_, corrupt_;
  double drop_prob_ = 0;
  uint64_t seed_ = 0;
  int64_t workers_ = 1;
  bool active_ = false;
};

}  // namespace atl
