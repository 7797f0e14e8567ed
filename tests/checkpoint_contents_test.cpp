// Checkpoint contents past the file format: a checkpoint whose bytes are a
// valid file (checksum and all) but whose records do not fit the run is
// refused by every strategy's state walk with a clear error naming the
// record, never a crash, and the run folder is left as it was. Mutations are
// made with the real serializer, so they reach the walk, not the parser
// (fuzz_checkpoint covers the parser).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "atoll/train.h"
#include "every_strategy.h"
#include "strategy/table.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/checkpoint.h"
#include "train/checkpoint_file.h"
#include "train/run_folder.h"
#include "util/file_io.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

struct Mutation {
  std::string what, record, expect;  // expect: in the error message
  CheckpointRecords records;
};

// Up to three tensor records of `part` (spread over the walk), each removed,
// re-shaped and re-typed (same bytes, so the file stays valid), plus a
// record the walk does not know.
std::vector<Mutation> mutations_of(const CheckpointRecords& original) {
  std::vector<std::string> tensors;
  for (const auto& [name, r] : original)
    if (r.kind == RecordKind::Tensor && r.element == ElementType::Float32 && !r.shape.empty()) tensors.push_back(name);
  std::vector<Mutation> out;
  for (size_t k = 0; k < 3 && k < tensors.size(); ++k) {
    const std::string name = tensors[k * tensors.size() / 3];
    Mutation m{"remove", name, name, original};
    m.records.erase(name);
    out.push_back(m);
    m = {"reshape", name, name, original};
    auto& shape = m.records.at(name).shape;
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d;
    shape = shape.size() == 1 ? std::vector<int64_t>{1, numel} : std::vector<int64_t>{numel};
    out.push_back(m);
    m = {"retype", name, name, original};
    m.records.at(name).element = ElementType::Int32;  // 4 bytes per element too
    out.push_back(m);
  }
  Mutation extra{"extra record", "zz.unknown", "zz.unknown", original};
  extra.records["zz.unknown"] = CheckpointRecord{};
  out.push_back(extra);
  return out;
}

TEST(CheckpointContents, EveryStrategysStateWalkRefusesRecordsThatDoNotFitNamingThemAndLeavesTheRunAlone) {
  int refused = 0;
  for (const Method& method : strategy_table()) {
    SCOPED_TRACE(method.name);
    testing::TempDir tmp;
    Config cfg = tiny_config(method.name, testing::workers_for(method.name, 2));
    cfg.run.out_dir = tmp.str();
    cfg.run.name = "run";
    cfg.train.steps = 12;
    cfg.diloco.inner_steps = 3;
    cfg.run.checkpoint_every = 6;
    cfg.run.stop_at = 6;
    train(cfg);
    const CheckpointStore store(tmp.path("run"));
    cfg.run.stop_at = 0;
    cfg.run.resume = "true";
    for (const std::string part : {"driver", "worker-0"}) {
      const fs::path file = store.file(6, part);
      const std::string original = read_file_bytes(file.string());
      for (const Mutation& m : mutations_of(parse_checkpoint(original))) {
        write_file_atomic(file.string(), serialize_checkpoint(m.records));
        const auto before = testing::folder_snapshot(tmp.path("run"));
        try {
          train(cfg);
          ADD_FAILURE() << part << ": " << m.what << " of '" << m.record << "' was accepted";
        } catch (const std::exception& e) {
          EXPECT_NE(std::string(e.what()).find(m.expect), std::string::npos)
              << part << ": " << m.what << " of '" << m.record << "': " << e.what();
          ++refused;
        }
        EXPECT_TRUE(testing::folder_snapshot(tmp.path("run")) == before)
            << part << ": " << m.what << " changed the run folder";
      }
      write_file_atomic(file.string(), original);
    }
    const RunSummary resumed = train(cfg);  // the intact checkpoint still resumes
    EXPECT_FALSE(resumed.events.empty());
  }
  std::printf("checkpoint contents: %d mutated checkpoints refused, naming the record\n", refused);
}

}  // namespace
}  // namespace atl
