// Bad input through the CLI: each case must exit 1 with a message naming
// the problem, and leave an existing run folder byte for byte as it was.
// The test prints the table of inputs and first message lines that
// docs/RELIABILITY.md quotes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "atoll/train.h"
#include "child_process.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/checkpoint.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::kAtoll;

// Every file under `dir` with its bytes.

struct Outcome {
  int code = 0;
  std::string message;  // stderr
};

Outcome run_cli(const testing::TempDir& tmp, const std::vector<std::string>& args) {
  testing::ChildProcess p(kAtoll, args, tmp.path("cli.out"), tmp.path("cli.err"));
  Outcome o;
  o.code = p.wait_exit(120s);
  o.message = p.err_text();
  return o;
}

// The error line (notes before it dropped); when it ends in ':' the first
// listed problem is appended.
std::string first_line(const std::string& text) {
  const size_t start = text.find("atoll: error:");
  if (start == std::string::npos) return text.substr(0, text.find('\n'));
  const size_t end = text.find('\n', start);
  std::string s = text.substr(start, end - start);
  if (!s.empty() && s.back() == ':' && end != std::string::npos) {
    const size_t next_end = text.find('\n', end + 1);
    std::string next = text.substr(end + 1, next_end == std::string::npos ? std::string::npos : next_end - end - 1);
    s += " " + next.substr(next.find_first_not_of(" -"));
  }
  return s;
}

TEST(BadInput, EveryCaseExitsWithAMessageNamingTheProblemAndLeavesTheRunFolderAsItWas) {
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "run";
  cfg.train.steps = 24;
  cfg.diloco.inner_steps = 4;
  cfg.run.checkpoint_every = 5;
  cfg.run.stop_at = 15;
  const std::string good = tmp.write("good.toml", to_toml(cfg));
  // An interrupted run with checkpoints at 5, 10 and 15: the folder every case must leave alone.
  ASSERT_EQ(run_cli(tmp, {"train", good}).code, 0);
  const fs::path run = tmp.path("run");
  const CheckpointStore store(run);
  ASSERT_EQ(store.steps(), (std::vector<int64_t>{15, 10, 5}));

  // A second finished run, and a copy of the data with a truncated train.bin.
  Config other = cfg;
  other.run.name = "other";
  other.run.stop_at = 0;
  other.model.n_embd = 32;
  const std::string other_path = tmp.write("other.toml", to_toml(other));
  ASSERT_EQ(run_cli(tmp, {"train", other_path, "--run.stop_at=15"}).code, 0);
  const std::string done_path = tmp.write("done.toml", to_toml(other));
  ASSERT_EQ(run_cli(tmp, {"train", done_path, "--run.name=done"}).code, 0);
  const std::string data_copy = tmp.path("data_copy");
  fs::copy(tiny_text_dir(), data_copy);
  fs::resize_file(fs::path(data_copy) / "train.bin", fs::file_size(fs::path(data_copy) / "train.bin") - 1);
  const std::string no_meta = tmp.path("no_meta");
  fs::copy(tiny_text_dir(), no_meta);
  fs::remove(fs::path(no_meta) / "meta.json");
  // meta.json with a value nested 400,000 levels deep: it once crashed the
  // run (a stack overflow in the error message that dumped the value).
  const std::string deep_meta = tmp.path("deep_meta");
  fs::copy(tiny_text_dir(), deep_meta);
  std::ofstream(fs::path(deep_meta) / "meta.json", std::ios::trunc)
      << "{\"vocab_size\": " << std::string(400000, '[') << std::string(400000, ']') << ", \"tokenizer\": \"char\"}";

  // A folder of the user's next to the runs: no case may delete it.
  fs::create_directories(tmp.path("notes"));
  tmp.write("notes/todo.txt", "keep me");

  struct Case {
    std::string what;
    std::vector<std::string> args;
    std::string expect;  // in the message
    std::function<void()> prepare = nullptr, restore = nullptr;
  };
  const std::string ckpt15 = store.file(15, "worker-1").string(), ckpt10 = store.file(10, "worker-1").string();
  const std::string saved15 = testing::read_text(ckpt15), saved10 = testing::read_text(ckpt10);
  auto flip_byte = [](const std::string& path) {
    std::string bytes = testing::read_text(path);
    bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  auto put_back = [&] {
    std::ofstream(ckpt15, std::ios::binary | std::ios::trunc) << saved15;
    std::ofstream(ckpt10, std::ios::binary | std::ios::trunc) << saved10;
  };
  // A checkpoint whose checksum is right but whose ledger claims 2^39
  // entries (the old limit was 2^40, whatever the file held).
  auto inflate_count = [&] {
    CheckpointRecords records = store.read(15, "worker-1");
    records.at("comm.ledger.entries.count").integer = int64_t(1) << 39;
    store.write(15, "worker-1", records);
  };
  const std::vector<Case> cases = {
      {"malformed TOML", {"train", tmp.write("a.toml", "[train\nsteps = 3\n")}, "a.toml"},
      {"wrong type", {"train", tmp.write("b.toml", "[train]\nsteps = \"ten\"\n")}, "train.steps"},
      {"out-of-range value", {"train", good, "--resume", "--faults.drop_prob=1.5"}, "faults.drop_prob"},
      {"unknown key", {"train", good, "--resume", "--train.stepz=5"}, "train.stepz"},
      {"unknown strategy", {"train", good, "--resume", "--strategy=diloko"}, "diloko"},
      {"unknown codec", {"train", good, "--resume", "--diloco.codec=fp3"}, "fp3"},
      {"bad fault schedule", {"train", good, "--resume", "--faults.absent=1@x-3"}, "faults.absent"},
      {"missing data folder", {"train", good, "--run.name=fresh", "--data.dir=" + tmp.path("nowhere")}, "nowhere"},
      {"truncated data file", {"train", good, "--run.name=fresh", "--data.dir=" + data_copy}, "train.bin"},
      {"data without meta.json", {"train", good, "--run.name=fresh", "--data.dir=" + no_meta}, "meta.json"},
      {"meta.json nested 400,000 levels deep",
       {"train", good, "--run.name=fresh", "--data.dir=" + deep_meta},
       "meta.json: JSON nested deeper than 64 levels"},
      {"dist timeout that is not finite",
       {"train", good, "--resume", "--dist-timeout=inf"},
       "--dist-timeout='inf' is out of range"},
      {"existing run folder", {"train", good}, "already exists"},
      {"overwrite of a folder that is not a run",
       {"train", good, "--run.name=notes", "--overwrite"},
       "is not an atoll run folder"},
      {"run name that leaves its folder", {"train", good, "--run.name=.."}, "run.name must be"},
      {"resume with another strategy", {"train", good, "--resume", "--strategy=ddp"}, "strategy.name"},
      {"resume with another model", {"train", good, "--resume", "--model.n_embd=32"}, "model.n_embd"},
      {"resume a finished run", {"train", done_path, "--run.name=done", "--resume"}, "has finished"},
      {"resume with no run folder", {"train", good, "--resume", "--run.name=never"}, "holds no run"},
      {"checkpoint count the file cannot hold",
       {"train", good, "--resume"},
       "entries.count' is 549755813888",
       inflate_count,
       [&] { put_back(); }},
      {"every checkpoint corrupted",
       {"train", good, "--resume"},
       "checksum mismatch",
       [&] {
         flip_byte(ckpt15);
         flip_byte(ckpt10);
         fs::resize_file(store.file(5, "driver"), 100);
       },
       [&] { put_back(); }},
      {"checkpoint from another run copied in",
       {"train", good, "--resume"},
       "other settings",
       [&] {
         for (const auto& part : {"driver", "worker-0", "worker-1"})
           fs::copy_file(CheckpointStore(tmp.path("other")).file(15, part), store.file(15, part),
                         fs::copy_options::overwrite_existing);
       },
       nullptr},
  };
  // The truncated driver file of step 5 stays truncated after its case:
  // the last case must find step 15 (overwritten by the copy) first.
  std::printf("\n| bad input | exit | message (first line) |\n|---|---|---|\n");
  for (const auto& c : cases) {
    if (c.prepare) c.prepare();
    const auto before = testing::folder_snapshot(run);
    const Outcome o = run_cli(tmp, c.args);
    EXPECT_EQ(o.code, 1) << c.what << ": " << o.message;
    EXPECT_NE(o.message.find("atoll: error:"), std::string::npos) << c.what << ": " << o.message;
    EXPECT_NE(o.message.find(c.expect), std::string::npos) << c.what << ": " << o.message;
    EXPECT_TRUE(testing::folder_snapshot(run) == before) << c.what << " changed the run folder";
    EXPECT_FALSE(fs::exists(tmp.path("fresh") + "/summary.json")) << c.what;
    EXPECT_EQ(testing::read_text(tmp.path("notes/todo.txt")), "keep me") << c.what;
    std::string line = first_line(o.message);
    for (auto& ch : line)
      if (ch == '|') ch = '/';
    std::printf("| %s | %d | %s |\n", c.what.c_str(), o.code, line.c_str());
    if (c.restore) c.restore();
  }
}

TEST(Cli, AtollAloneListsEveryCommandWithALineEach) {
  testing::TempDir tmp;
  testing::ChildProcess p(kAtoll, {}, tmp.path("out"), tmp.path("err"));
  ASSERT_EQ(p.wait_exit(60s), 0) << p.err_text();
  const std::string out = p.out_text();
  for (const char* command : {"train", "sweep", "compare", "report", "results", "cost", "retime", "whatif", "export",
                              "sample", "launch", "prepare", "bench", "config", "token"})
    EXPECT_NE(out.find("\n  " + std::string(command) + " "), std::string::npos) << command << " is not listed:\n"
                                                                                << out;
  // Each line is a whole clause: no parenthesis left open by shortening it.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    EXPECT_EQ(std::count(line.begin(), line.end(), '('), std::count(line.begin(), line.end(), ')')) << line;
}

TEST(Cli, TheStartLineComesBeforeAnErrorEvenThroughAPipe) {
  testing::TempDir tmp;
  // Both streams into one file, as `atoll train ... 2>&1 | less` shows them.
  testing::ChildProcess p("/bin/sh",
                          {"-c", kAtoll + " train --data.dataset=text --data.dir=" + tmp.path("nowhere") +
                                     " --run.out_dir=" + tmp.str() + " > " + tmp.path("both") + " 2>&1"},
                          tmp.path("out"), tmp.path("err"));
  ASSERT_EQ(p.wait_exit(60s), 1);
  const std::string both = testing::read_text(tmp.path("both"));
  const size_t start = both.find("atoll train:"), error = both.find("atoll: error:");
  ASSERT_NE(error, std::string::npos) << both;
  ASSERT_NE(start, std::string::npos) << both;
  EXPECT_LT(start, error) << both;
}

TEST(BadInput, ACorruptedNewestCheckpointIsPassedOverForTheNewestIntactOne) {
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.run.out_dir = tmp.str();
  cfg.train.steps = 24;
  cfg.diloco.inner_steps = 4;
  cfg.network.compute_time = "flops";
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);
  cfg.run.name = "run";
  cfg.run.checkpoint_every = 5;
  cfg.run.stop_at = 15;
  train(cfg);
  const CheckpointStore store(tmp.path("run"));
  std::string bytes = testing::read_text(store.file(15, "worker-0"));
  bytes[bytes.size() - 3] ^= 0x10;
  std::ofstream(store.file(15, "worker-0"), std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(store.latest_complete({"driver", "worker-0", "worker-1"}, nullptr), 10);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  const RunSummary resumed = train(cfg);
  EXPECT_EQ(nlohmann::json::parse(resumed.events.back()).at("params_hash_per_worker"),
            nlohmann::json::parse(whole.events.back()).at("params_hash_per_worker"));
}

}  // namespace
}  // namespace atl
