// Atomic, durable writes and the fsyncs of files written in place
// (src/util/file_io.h).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "test_util.h"
#include "util/file_io.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

TEST(FileIo, AnAtomicWriteMakesItsFoldersLeavesNoTemporaryFileAndHasTheUsualPermissions) {
  testing::TempDir dir;
  const std::string path = dir.path("a/b/c.txt");
  write_file_atomic(path, "one");
  write_file_atomic(path, "two");
  EXPECT_EQ(read_file_bytes(path), "two");
  EXPECT_FALSE(testing::temp_file_left(path));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST(FileIo, SyncingAFileWrittenInPlaceNeverFollowsASymlinkAndNamesWhatFailed) {
  testing::TempDir dir;
  const std::string log = dir.write("metrics.jsonl", "{}\n");
  EXPECT_NO_THROW(sync_file(log));
  EXPECT_NO_THROW(sync_folder(dir.str()));
  fs::create_symlink(log, dir.path("link.jsonl"));
  try {
    sync_file(dir.path("link.jsonl"));
    ADD_FAILURE() << "synced through a symlink";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("link.jsonl"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sync_folder(dir.path("nowhere")), std::runtime_error);
}

}  // namespace
}  // namespace atl
