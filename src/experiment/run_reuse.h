// Finding a finished run that is the same computation as one a sweep is
// about to start, in the sweep folders beside it, and copying it in.
//
// A run is a function of its computation keys (every config key but the
// run's name, folder, thread count and progress/resume switches): atoll's
// runs are bitwise reproducible, so a finished run with the same keys *is*
// the run. The reproduction presets share such runs (R1's N = 8, H = 20 arm
// is R3's; R3's H = 20 arms are R4's; R2's H = 20 arm is R3's N = 1), and
// `reproduce` would otherwise train each of them twice.
//
// Thread-safety: none; one sweep uses one index.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "atoll/config.h"

namespace atl {

class FinishedRunIndex {
 public:
  // Indexes <root>/<sweep>/<run>/ folders holding summary.json and
  // config.toml, except those of `own_sweep` (its runs are checked by name).
  // A folder whose config cannot be read is left out, never an error: it is
  // another sweep's business.
  FinishedRunIndex(const std::filesystem::path& root, const std::filesystem::path& own_sweep);

  // The finished run whose computation keys equal `computation` (as
  // only_keys(flatten(cfg), is_computation_key) gives them); empty if none.
  std::filesystem::path find(const FlatConfig& computation) const;

 private:
  std::map<FlatConfig, std::filesystem::path> runs_;
};

// Copies the run folder `from` to `to` (which must not exist) through
// `<to>.copying`, renamed when complete, so an interrupted copy never looks
// like a finished run; a leftover `<to>.copying` from an earlier interrupted
// copy is replaced only if it holds nothing but run entries. Copies the
// run's log beside it (`<from>.log`) as `<to>.log` when there is one.
void copy_finished_run(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace atl
