// atoll deletes only its own run folders: --run.overwrite (and retime's
// --overwrite) refuses a folder that holds anything atoll does not write
// there and leaves every file in place; run names and output paths that
// could leave their parent (NUL, control characters, "..") are refused
// before any work starts (issue 33, "Folders and files").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "atoll/config.h"
#include "atoll/retime.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/run_folder.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Config small_run(const testing::TempDir& tmp, const std::string& name) {
  Config cfg = tiny_config("single", 1);
  cfg.train.steps = 4;
  cfg.train.eval_every = 0;
  cfg.run.out_dir = tmp.str();
  cfg.run.name = name;
  return cfg;
}

TEST(RunFolderSafety, OverwriteRefusesAFolderThatIsNotARunAndLeavesEveryFile) {
  testing::TempDir tmp;
  const fs::path notes = tmp.path("notes");
  fs::create_directories(notes / "drafts");
  std::ofstream(notes / "todo.txt") << "keep me";
  std::ofstream(notes / "drafts" / "a.md") << "# draft";
  const auto before = testing::folder_snapshot(notes);
  Config cfg = small_run(tmp, "notes");
  cfg.run.overwrite = true;
  const std::string msg = message_of([&] { train(cfg); });
  EXPECT_NE(msg.find("is not an atoll run folder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("todo.txt"), std::string::npos) << "names what it found: " << msg;
  EXPECT_EQ(testing::folder_snapshot(notes), before);
}

TEST(RunFolderSafety, OverwriteRefusesARunFolderThatAlsoHoldsTheUsersFiles) {
  testing::TempDir tmp;
  Config cfg = small_run(tmp, "r");
  const RunSummary first = train(cfg);
  // A file the user put into the finished run folder is theirs: a
  // replacement of the run would delete it, so it is refused.
  std::ofstream(fs::path(first.run_dir) / "my_analysis.ipynb") << "{}";
  const auto before = testing::folder_snapshot(first.run_dir);
  cfg.run.overwrite = true;
  const std::string msg = message_of([&] { train(cfg); });
  EXPECT_NE(msg.find("my_analysis.ipynb"), std::string::npos) << msg;
  EXPECT_EQ(testing::folder_snapshot(first.run_dir), before);
  // Without it the run is replaced, as before.
  fs::remove(fs::path(first.run_dir) / "my_analysis.ipynb");
  EXPECT_NO_THROW(train(cfg));
}

TEST(RunFolderSafety, AFolderIsARunOnlyWithAtollsConfigAndOnlyAtollsEntries) {
  testing::TempDir tmp;
  const RunSummary s = train(small_run(tmp, "r"));
  std::string why;
  EXPECT_TRUE(is_run_folder(s.run_dir, &why)) << why;
  // A config.toml of the user's (not written by atoll) is not the marker.
  const fs::path other = tmp.path("other");
  fs::create_directories(other);
  std::ofstream(other / "config.toml") << "[train]\nsteps = 5\n";
  EXPECT_FALSE(is_run_folder(other, &why));
  EXPECT_NE(why.find("no config.toml written by atoll"), std::string::npos) << why;
  // A symlink inside a run folder is not atoll's either.
  fs::create_symlink(tmp.str(), fs::path(s.run_dir) / "timing_link");
  EXPECT_FALSE(is_run_folder(s.run_dir, &why));
  EXPECT_NE(why.find("timing_link"), std::string::npos) << why;
  // Nor is a folder that is itself a symlink to a run.
  fs::remove(fs::path(s.run_dir) / "timing_link");
  fs::create_directory_symlink(s.run_dir, tmp.path("alias"));
  EXPECT_FALSE(is_run_folder(tmp.path("alias"), &why));
}

TEST(RunFolderSafety, RetimeOverwriteRefusesAFolderThatIsNotARun) {
  testing::TempDir tmp;
  Config cfg = small_run(tmp, "r");
  cfg.network.compute_time = "flops";
  const RunSummary s = train(cfg);
  const fs::path target = tmp.path("elsewhere");
  fs::create_directories(target);
  std::ofstream(target / "thesis.tex") << "\\documentclass{article}";
  const auto before = testing::folder_snapshot(target);
  const RetimedRun r = retime_run(s.run_dir, {"network.bandwidth=1Gbit/s"});
  const std::string msg = message_of([&] { write_retimed_run(r, s.run_dir, target.string(), true); });
  EXPECT_NE(msg.find("is not an atoll run folder"), std::string::npos) << msg;
  EXPECT_EQ(testing::folder_snapshot(target), before);
}

TEST(RunFolderSafety, NamesAndPathsThatLeaveTheirParentAreRefusedBeforeAnyWork) {
  testing::TempDir tmp;
  std::ofstream(fs::path(tmp.str()) / "keep.txt") << "keep";
  const auto before = testing::folder_snapshot(tmp.str());
  struct Case {
    std::string name, out_dir, expect;
  };
  const std::vector<Case> cases = {
      {std::string("..\0x", 4), tmp.str(), "run.name must be"},
      {"..", tmp.str(), "run.name must be"},
      {"a\nb", tmp.str(), "run.name must be"},
      {"a\x1b[2Jb", tmp.str(), "run.name must be"},
      {"ok", tmp.str() + "/../elsewhere", "run.out_dir must be"},
      {"ok", tmp.str() + std::string("\0/x", 3), "run.out_dir must be"},
      {"ok", "", "run.out_dir must be"},
  };
  for (const auto& c : cases) {
    Config cfg = small_run(tmp, "x");
    cfg.run.name = c.name;
    cfg.run.out_dir = c.out_dir;
    cfg.run.overwrite = true;
    const std::string msg = message_of([&] { train(cfg); });
    EXPECT_NE(msg.find(c.expect), std::string::npos)
        << "name '" << c.name << "' out_dir '" << c.out_dir << "': " << msg;
  }
  EXPECT_EQ(testing::folder_snapshot(tmp.str()), before);
  // The same from a TOML file, where \u0000 is legal in a string.
  const std::string path = tmp.write("nul.toml", "[run]\nname = \"..\\u0000\"\n");
  const std::string msg = message_of([&] { load_config(path, {}); });
  EXPECT_NE(msg.find("run.name must be"), std::string::npos) << msg;
  fs::remove(path);
}

}  // namespace
}  // namespace atl
