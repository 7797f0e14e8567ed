// An override of a key the chosen method does not read is refused (issue 35;
// setup/overrides.cpp, the strategy table's `reads` column): on the command
// line (load_config(), `atoll config`/`train`) and in a sweep's runs and grid;
// the same key in a config file is accepted. Sweep-wide overrides (--quick's,
// the command line's) reach the runs whose method reads them.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdlib>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/experiment.h"
#include "atoll/setup.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::TempDir;

// load_config()'s ConfigError text ("" if it loads).
std::string problems(const std::string& path, const std::vector<std::string>& overrides,
                     OverrideCheck check = OverrideCheck::kChosenMethod) {
  try {
    load_config(path, overrides, check);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(UnreadKeys, AnOverrideOfASectionTheMethodDoesNotReadIsRefusedNamingTheMethodAndWhatItReads) {
  const std::string msg = problems("", {"strategy.name=sparta", "strategy.workers=2", "diloco.ddp_warmup_steps=100"});
  EXPECT_TRUE(has(msg,
                  "diloco.ddp_warmup_steps=100: strategy 'sparta' reads no [diloco] keys (it reads [sparta]); "
                  "drop it, or choose a method that reads diloco.ddp_warmup_steps: diloco, sparta_diloco, sparseloco, "
                  "streaming"))
      << msg;
  // Every method-section key the method does not read, one problem each; a
  // method that reads no method section says so.
  const std::string single = problems("", {"demo.beta=0.9", "noloco.group_size=3"});
  EXPECT_TRUE(has(single, "demo.beta=0.9: strategy 'single' reads no [demo] keys (it reads no method section)"))
      << single;
  EXPECT_TRUE(has(single, "noloco.group_size=3: strategy 'single'")) << single;
}

TEST(UnreadKeys, AKeyOfASectionTheMethodReadsOnlyInPartIsRefusedNamingTheKeysItReads) {
  // PALSGD has its own warm-up key; of [diloco] it reads robust aggregation.
  const std::string palsgd = problems("", {"strategy.name=palsgd", "strategy.workers=2", "diloco.ddp_warmup_steps=9"});
  EXPECT_TRUE(has(palsgd,
                  "diloco.ddp_warmup_steps=9: strategy 'palsgd' does not read diloco.ddp_warmup_steps (of "
                  "[diloco] it reads diloco.aggregator, diloco.trim_fraction, diloco.clip_norm)"))
      << palsgd;
  // Streaming sends with streaming.codec and takes its own outer step.
  const std::string streaming = problems("", {"strategy.name=streaming", "strategy.workers=2", "diloco.codec=fp16"});
  EXPECT_TRUE(has(streaming, "diloco.codec=fp16: strategy 'streaming' does not read diloco.codec")) << streaming;
  EXPECT_TRUE(has(streaming, "choose a method that reads diloco.codec: diloco, sparta_diloco")) << streaming;
  EXPECT_EQ(problems("", {"strategy.name=streaming", "strategy.workers=2", "diloco.outer_lr=0.5"}), "");
}

TEST(UnreadKeys, KeysTheMethodReadsAndSharedSectionsAreAcceptedAsOverridesTheOthersNot) {
  EXPECT_NE(problems("", {"strategy.name=sparta", "strategy.workers=2", "diloco.inner_steps=7"}), "");
  EXPECT_EQ(problems("", {"strategy.name=sparta", "strategy.workers=2", "sparta.p=0.01", "codec.block=64",
                          "train.steps=10", "network.bandwidth=1Gbit/s"}),
            "");
  EXPECT_EQ(problems("", {"strategy.name=localsgd", "strategy.workers=2", "diloco.inner_steps=7"}), "");
  EXPECT_EQ(
      problems("", {"strategy.name=diloco", "strategy.workers=2", "diloco.ddp_warmup_steps=5", "ddp.bucket_mb=5"}), "");
  // The method is the one the overrides end with, whatever their order.
  EXPECT_EQ(problems("", {"sparta.p=0.01", "strategy.workers=2", "strategy.name=sparta"}), "");
}

TEST(UnreadKeys, TheSameKeyInTheConfigFileIsAccepted) {
  TempDir dir;
  const std::string path = dir.write("c.toml",
                                     "[strategy]\nname = \"sparta\"\nworkers = 2\n[diloco]\nddp_warmup_steps = 100\n"
                                     "[palsgd]\np = 0.1\n[demo]\nbeta = 0.9\n");
  EXPECT_EQ(problems(path, {}), "");
  EXPECT_EQ(problems(path, {"train.steps=10"}), "");
  // The file's method is the one overrides are held to.
  EXPECT_TRUE(has(problems(path, {"demo.topk=8"}), "demo.topk=8: strategy 'sparta' reads no [demo] keys")) << path;
}

TEST(UnreadKeys, WithIslandsEveryMethodReadsTheGradientAllReduceKeys) {
  const std::vector<std::string> sparta = {"strategy.name=sparta", "strategy.workers=4", "ddp.overlap=false"};
  const std::string msg = problems("", sparta);
  EXPECT_TRUE(has(msg, "ddp.overlap=false: strategy 'sparta' reads no [ddp] keys")) << msg;
  EXPECT_TRUE(has(msg, "(with islands.devices > 1 every method reads it)")) << msg;
  std::vector<std::string> islands = sparta;
  islands.push_back("islands.devices=2");
  EXPECT_EQ(problems("", islands), "");
  // ddp.codec is DDP's alone: an island's all-reduce sends fp32.
  islands.push_back("ddp.codec=bf16");
  EXPECT_TRUE(has(problems("", islands), "ddp.codec=bf16: strategy 'sparta'"));
}

TEST(UnreadKeys, TheBenchsAnyMethodCheckAcceptsEveryMethodsKeys) {
  const std::vector<std::string> all = {"diloco.inner_steps=20", "noloco.inner_steps=10", "palsgd.inner_steps=8"};
  EXPECT_EQ(problems("", all, OverrideCheck::kAnyMethod), "");
  EXPECT_NE(problems("", all), "");
}

// A preset over no data (load_sweep only reads configs): diloco by default.
std::string preset(const TempDir& dir, const std::string& sweep) {
  return dir.write("p.toml", "[strategy]\nname = \"diloco\"\nworkers = 2\n[sparta]\np = 0.01\n" + sweep);
}

TEST(UnreadKeys, ASweepRunOrGridValueItsMethodDoesNotReadIsRefusedNamingTheRun) {
  TempDir dir;
  const std::string runs = "[sweep]\nruns = [\"d: strategy.name=diloco\", \"s: strategy.name=sparta\"]\n";
  auto msg = [&](const std::string& sweep, const std::vector<std::string>& grid = {}) {
    return testing::invalid_argument_message([&] { load_sweep(preset(dir, sweep), grid, {}, false); });
  };
  const std::string own = msg("[sweep]\nruns = [\"s: strategy.name=sparta diloco.ddp_warmup_steps=100\"]\n");
  EXPECT_TRUE(has(own, "run 's'")) << own;
  EXPECT_TRUE(has(own, "diloco.ddp_warmup_steps=100: strategy 'sparta' reads no [diloco] keys (it reads [sparta])"))
      << own;
  // A grid axis given to every run reaches the SPARTA run too.
  const std::string grid = msg(runs + "grid = [\"diloco.inner_steps=2,3\"]\n");
  EXPECT_TRUE(has(grid, "run 's_inner_steps2'")) << grid;
  EXPECT_TRUE(has(grid, "strategy 'sparta' reads no [diloco] keys")) << grid;
  const std::string cli_grid = msg(runs, {"sparta.p=0.1,0.2"});
  EXPECT_TRUE(has(cli_grid, "run 'd_p0.1'")) << cli_grid;
  EXPECT_TRUE(has(cli_grid, "sparta.p=0.1: strategy 'diloco' reads no [sparta] keys")) << cli_grid;
  // Restricted to the runs that read it, the axis is fine.
  EXPECT_EQ(msg(runs + "grid = [\"diloco.inner_steps=2,3@d\"]\n", {"sparta.p=0.1,0.2@s"}), "");
}

TEST(UnreadKeys, SweepWideOverridesReachTheRunsThatReadThemAndOneNoRunReadsIsRefused) {
  TempDir dir;
  const std::string path = preset(dir,
                                  "[sweep]\nruns = [\"d: strategy.name=diloco\", \"s: strategy.name=sparta\"]\n"
                                  "quick = [\"diloco.inner_steps=4\", \"train.steps=8\"]\n");
  const SweepSpec spec = load_sweep(path, {}, {"sparta.p=0.2", "optim.lr=0.01"}, true);
  ASSERT_EQ(spec.runs.size(), 2u);
  EXPECT_EQ(spec.runs[0].overrides, (std::vector<std::string>{"diloco.inner_steps=4", "train.steps=8",
                                                              "strategy.name=diloco", "optim.lr=0.01"}));
  EXPECT_EQ(spec.runs[1].overrides,
            (std::vector<std::string>{"train.steps=8", "strategy.name=sparta", "sparta.p=0.2", "optim.lr=0.01"}));
  const std::string none = testing::invalid_argument_message([&] { load_sweep(path, {}, {"demo.topk=8"}, false); });
  EXPECT_TRUE(has(none,
                  "demo.topk=8 (for every run) is read by no run of the sweep (run 'd': strategy 'diloco' "
                  "reads no [demo] keys"))
      << none;
}

TEST(UnreadKeys, TheCommandLineRefusesItBeforeAnyWork) {
  TempDir dir;
  const std::string log = dir.path("out.log");
  const std::string cmd =
      testing::kAtoll + " config --strategy=sparta --workers=2 --diloco.ddp_warmup_steps=100 > '" + log + "' 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  const std::string out = testing::read_text(log);
  EXPECT_TRUE(has(out, "diloco.ddp_warmup_steps=100: strategy 'sparta' reads no [diloco] keys")) << out;
  // The key a method reads passes.
  EXPECT_EQ(std::system((testing::kAtoll +
                         " config --strategy=sparta --workers=2 "
                         "--sparta.p=0.01 > '" +
                         log + "' 2>&1")
                            .c_str()),
            0)
      << testing::read_text(log);
}

}  // namespace
}  // namespace atl
