#include "experiment/run_reuse.h"

#include <stdexcept>
#include <system_error>

#include "train/run_folder.h"
#include "util/file_io.h"

namespace atl {
namespace fs = std::filesystem;

FinishedRunIndex::FinishedRunIndex(const fs::path& root, const fs::path& own_sweep) {
  std::error_code ec;
  const fs::path own = fs::weakly_canonical(own_sweep, ec);
  for (const auto& sweep : fs::directory_iterator(root, ec)) {
    if (!sweep.is_directory() || sweep.is_symlink()) continue;
    std::error_code same;
    if (fs::weakly_canonical(sweep.path(), same) == own) continue;
    std::error_code inner;
    for (const auto& run : fs::directory_iterator(sweep.path(), inner)) {
      if (!run.is_directory() || run.is_symlink()) continue;
      const fs::path config = run.path() / "config.toml";
      if (!fs::is_regular_file(run.path() / "summary.json") || !fs::is_regular_file(config)) continue;
      try {
        FlatConfig keys = only_keys(
            with_keys_added_later(flatten_toml(read_file_bytes(config.string()), config.string())), is_computation_key);
        runs_.emplace(std::move(keys), run.path());  // the first of several equal runs is kept
      } catch (const std::exception&) {
        // Not a run this version of atoll can read: not a twin.
      }
    }
  }
}

fs::path FinishedRunIndex::find(const FlatConfig& computation) const {
  auto it = runs_.find(computation);
  return it == runs_.end() ? fs::path() : it->second;
}

void copy_finished_run(const fs::path& from, const fs::path& to) {
  if (fs::exists(to)) throw std::runtime_error("sweep: '" + to.string() + "' exists; not copying a run over it");
  fs::path partial = to;
  partial += ".copying";
  if (fs::exists(partial)) {
    std::string why;
    if (!holds_only_run_entries(partial, &why))
      throw std::runtime_error("sweep: '" + partial.string() + "' is not a copy this sweep started (" + why +
                               "); move it away");
    fs::remove_all(partial);
  }
  fs::copy(from, partial, fs::copy_options::recursive);
  fs::rename(partial, to);
  sync_folder(to.parent_path().string());
  fs::path log = from;
  log += ".log";
  if (fs::is_regular_file(log)) {
    fs::path copy = to;
    copy += ".log";
    fs::copy_file(log, copy, fs::copy_options::overwrite_existing);
  }
}

}  // namespace atl
