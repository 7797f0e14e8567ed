// Checkpoints of a run folder: StateVisitor implementations that turn state
// into checkpoint records and back, and the on-disk store.
//
//   <run>/checkpoints/step-00000100/driver.ckpt     observer state, metrics sizes
//   <run>/checkpoints/step-00000100/worker-3.ckpt   model, strategy, data cursor,
//                                                   ledger and clock of worker 3
//
// Each file is written atomically (temporary file, fsync, rename, fsync of
// the folder) and carries a checksum, so a crash or SIGKILL at any moment
// leaves every file either complete or absent. A step counts only when all
// its files read back and check out; resume takes the newest such step.
// Thread-safety: a StateWriter/StateReader belongs to one thread; the store
// holds no mutable state.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "atoll/state.h"
#include "train/checkpoint_file.h"

namespace atl {

class StateWriter final : public StateVisitor {
 public:
  bool loading() const override { return false; }
  void tensor(const std::string& name, at::Tensor& t) override;
  void integer(const std::string& name, int64_t& v) override;
  void real(const std::string& name, double& v) override;
  void text(const std::string& name, std::string& v) override;
  CheckpointRecords& records() { return records_; }

 private:
  void add(const std::string& name, CheckpointRecord r);
  CheckpointRecords records_;
};

class StateReader final : public StateVisitor {
 public:
  // `source` names the file in error messages.
  StateReader(const CheckpointRecords& records, std::string source);
  bool loading() const override { return true; }
  void tensor(const std::string& name, at::Tensor& t) override;
  void integer(const std::string& name, int64_t& v) override;
  void real(const std::string& name, double& v) override;
  void text(const std::string& name, std::string& v) override;
  // Throws if the file holds state nothing read: it was written by a
  // different strategy or settings.
  void expect_all_read() const;

 protected:
  uint64_t unread_bytes() const override { return unread_bytes_; }
  std::string source() const override { return source_; }

 private:
  const CheckpointRecord& find(const std::string& name, RecordKind kind);
  const CheckpointRecords& records_;
  std::string source_;
  std::set<std::string> read_;
  uint64_t unread_bytes_ = 0;  // record_bytes() of the records not in read_
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::filesystem::path run_dir);
  const std::filesystem::path& folder() const { return folder_; }
  std::filesystem::path file(int64_t step, const std::string& part) const;
  void write(int64_t step, const std::string& part, const CheckpointRecords& records) const;
  // Throws CheckpointError naming the file and the problem.
  CheckpointRecords read(int64_t step, const std::string& part) const;
  // Steps that have a folder, newest first.
  std::vector<int64_t> steps() const;
  // The newest step whose `parts` all read back intact (-1: none); why each
  // newer step was passed over goes to `skipped`.
  int64_t latest_complete(const std::vector<std::string>& parts, std::vector<std::string>* skipped) const;
  // Every step whose `parts` all read back intact, newest first.
  std::vector<int64_t> complete_steps(const std::vector<std::string>& parts) const;
  // Keeps the `keep` newest step folders, removes the older ones.
  void prune(int64_t keep) const;
  // Removes step folders newer than `step` (left unfinished by a crash).
  void remove_after(int64_t step) const;

 private:
  bool intact(int64_t step, const std::vector<std::string>& parts, std::string* why) const;
  std::filesystem::path folder_;
};

// File part names: "driver" and "worker-<rank>".
std::string worker_part(int64_t rank);

// The settings that shape a run's trajectory, one "key = value" per line:
// the whole config except where files go, run names and the run.* controls
// (run.seed stays). A checkpoint resumes only a run with the same text.
struct Config;
std::string trajectory_config(const Config& cfg);
// The first few keys whose values differ between two trajectory_config()
// texts, as "key = A <where_saved> but B now".
std::string trajectory_difference(const std::string& saved, const std::string& now,
                                  const std::string& where_saved = "in the checkpoint");

}  // namespace atl
