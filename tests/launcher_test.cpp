// Tests for the local multi-process launcher (src/launch). Ranks are small
// /bin/sh scripts; files in a temp folder tell the test what they saw and
// when they are ready. Signals go to a forked helper that runs the launcher,
// so the test process itself is never interrupted.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "atoll/launch.h"
#include "test_util.h"

namespace atl {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Options running `script` under /bin/sh, with output captured in memory.
struct ShellJob {
  std::ostringstream out, err;
  LaunchOptions opts;

  ShellJob(const std::string& script, int64_t nproc) {
    opts.nproc = nproc;
    opts.argv = {"/bin/sh", "-c", script};
    opts.grace_seconds = 1;
    opts.out = &out;
    opts.err = &err;
  }
  LaunchResult run() { return launch_local(opts); }
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of `text` that rank k wrote, without their prefix.
std::vector<std::string> lines_of_rank(const std::string& text, int64_t k) {
  const std::string prefix = "[rank " + std::to_string(k) + "] ";
  std::vector<std::string> lines;
  for (const std::string& line : split_lines(text)) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line.substr(prefix.size()));
  }
  return lines;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

bool wait_for_files(const std::vector<std::string>& paths, double seconds) {
  const auto start = Clock::now();
  while (seconds_since(start) < seconds) {
    bool all = true;
    for (const std::string& p : paths) all = all && std::filesystem::exists(p);
    if (all) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t read_pid(const std::string& path) {
  const std::string text = read_text(path);
  return text.empty() ? -1 : static_cast<pid_t>(std::stol(text));
}

// Gone for good: no such process at all (our reaped children must be this).
bool is_gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Not running: gone, or a zombie waiting for its new parent. Orphans are
// re-parented to PID 1, and some container inits never reap them.
bool is_not_running(pid_t pid) {
  if (is_gone(pid)) return true;
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// A process that is not our child cannot be waited for: kill() returns
// before the target has died, so give a signalled one a moment.
bool stops_running_within(pid_t pid, double seconds) {
  const auto start = Clock::now();
  while (!is_not_running(pid)) {
    if (seconds_since(start) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

using testing::invalid_argument_message;

// Sets an environment variable for one scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// ---------------------------------------------------------------- environment and output

TEST(Launch, EveryRankSeesItsRankWorldSizeAndMaster) {
  // Variables already in the parent's environment are replaced, the rest kept.
  ScopedEnv stale_rank("RANK", "99");
  ScopedEnv kept("ATOLL_LAUNCH_TEST_KEPT", "yes");
  ShellJob job(
      "echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR "
      "$MASTER_PORT $ATOLL_LAUNCH_TEST_KEPT\"",
      3);
  const LaunchResult res = job.run();
  EXPECT_EQ(res.exit_code, 0);
  EXPECT_EQ(res.failed_rank, -1);
  EXPECT_EQ(res.error, "");
  EXPECT_EQ(job.err.str(), "");

  std::string port;
  for (int64_t k = 0; k < 3; ++k) {
    const auto lines = lines_of_rank(job.out.str(), k);
    ASSERT_EQ(lines.size(), 1u) << job.out.str();
    std::istringstream in(lines[0]);
    std::string rank, local_rank, world, local_world, group, addr, rank_port, kept_value;
    in >> rank >> local_rank >> world >> local_world >> group >> addr >> rank_port >> kept_value;
    const std::string k_text = std::to_string(k);
    EXPECT_EQ(rank, k_text);
    EXPECT_EQ(local_rank, k_text);
    EXPECT_EQ(world, "3");
    EXPECT_EQ(local_world, "3");
    EXPECT_EQ(group, "0");
    EXPECT_EQ(addr, "127.0.0.1");
    EXPECT_EQ(kept_value, "yes");
    if (k == 0) port = rank_port;
    EXPECT_EQ(rank_port, port) << "every rank must see the same MASTER_PORT";
  }
  // master_port = 0 picked a real port.
  EXPECT_GT(std::stoi(port), 0);
  EXPECT_LE(std::stoi(port), 65535);
}

TEST(Launch, UsesTheGivenMasterAddressAndPort) {
  ShellJob job("echo \"$MASTER_ADDR:$MASTER_PORT\"", 2);
  job.opts.master_addr = "localhost";
  job.opts.master_port = 29511;
  ASSERT_EQ(job.run().exit_code, 0);
  EXPECT_EQ(lines_of_rank(job.out.str(), 0), std::vector<std::string>{"localhost:29511"});
  EXPECT_EQ(lines_of_rank(job.out.str(), 1), std::vector<std::string>{"localhost:29511"});
}

TEST(Launch, SecondHostOfTwoRunsGlobalRanksAfterTheFirstHosts) {
  // Host 1 of 2 with 2 ranks each: global ranks 2 and 3, world 4, local 0 and 1.
  ShellJob job("echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK\"", 2);
  job.opts.nnodes = 2;
  job.opts.node_rank = 1;
  job.opts.master_port = 29512;
  ASSERT_EQ(job.run().exit_code, 0);
  EXPECT_EQ(lines_of_rank(job.out.str(), 2), std::vector<std::string>{"2 0 4 2 1"});
  EXPECT_EQ(lines_of_rank(job.out.str(), 3), std::vector<std::string>{"3 1 4 2 1"});
  job.opts.master_port = 0;  // the other hosts could not know a port picked here
  EXPECT_THROW(launch_local(job.opts), std::invalid_argument);
  job.opts.master_port = 29512;
  job.opts.node_rank = 2;
  EXPECT_THROW(launch_local(job.opts), std::invalid_argument);
}

TEST(Launch, PrefixesEveryLineOfEachRankIncludingAFinalPartialLine) {
  ShellJob job("printf 'one\\ntwo\\n'; printf 'warn\\n' >&2; printf 'last-err' >&2; printf 'last-out'", 2);
  ASSERT_EQ(job.run().exit_code, 0);
  const std::string out = job.out.str(), err = job.err.str();
  for (int64_t k = 0; k < 2; ++k) {
    EXPECT_EQ(lines_of_rank(out, k), (std::vector<std::string>{"one", "two", "last-out"}));
    EXPECT_EQ(lines_of_rank(err, k), (std::vector<std::string>{"warn", "last-err"}));
  }
  // Nothing else, and every line (the partial ones too) ends with '\n'.
  EXPECT_EQ(split_lines(out).size(), 6u) << out;
  EXPECT_EQ(split_lines(err).size(), 4u) << err;
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(err.back(), '\n');
}

TEST(Launch, CarriageReturnEndsALineLikeNewline) {
  // Progress-bar style: "\r" ends a line, "\r\n" is one ending, a bare
  // leading "\r" is not an empty line, a real blank line is kept.
  ShellJob job("printf '10%%\\r20%%\\r\\n\\rdone\\r\\n\\nafter\\n'", 1);
  ASSERT_EQ(job.run().exit_code, 0);
  EXPECT_EQ(lines_of_rank(job.out.str(), 0), (std::vector<std::string>{"10%", "20%", "done", "", "after"}));
}

TEST(Launch, LinesOfDifferentRanksNeverMix) {
  // awk writes in 4 KiB blocks, so lines straddle the launcher's reads.
  const int lines_per_rank = 20000;
  ShellJob job("awk -v r=$RANK 'BEGIN { for (i = 0; i < " + std::to_string(lines_per_rank) +
                   "; i++) printf \"%d:%d:abcdefghijklmnopqrstuvwxyz0123456789\\n\", r, i }'",
               4);
  ASSERT_EQ(job.run().exit_code, 0);
  std::map<int, int> next;  // rank -> next expected line number
  for (const std::string& line : split_lines(job.out.str())) {
    int prefix_rank = -1, rank = -1, i = -1;
    char tail[64] = {};
    ASSERT_EQ(std::sscanf(line.c_str(), "[rank %d] %d:%d:%63s", &prefix_rank, &rank, &i, tail), 4)
        << "mangled line: " << line;
    ASSERT_EQ(prefix_rank, rank) << line;
    ASSERT_EQ(i, next[rank]) << line;
    ASSERT_STREQ(tail, "abcdefghijklmnopqrstuvwxyz0123456789") << line;
    ++next[rank];
  }
  ASSERT_EQ(next.size(), 4u);
  for (const auto& [rank, count] : next) EXPECT_EQ(count, lines_per_rank) << "rank " << rank;
}

// ---------------------------------------------------------------- failures

TEST(Launch, FailingRankStopsTheOthersPromptlyAndQuotesItsError) {
  testing::TempDir dir;
  // Ranks 0 and 2 start a background sleep (a grandchild of the launcher),
  // record both pids, then become `sleep 30` themselves. Rank 1 waits until
  // they are ready, then fails.
  ShellJob job("D='" + dir.str() +
                   "'\n"
                   "if [ \"$RANK\" = 1 ]; then\n"
                   "  while [ ! -e \"$D/pid_0\" ] || [ ! -e \"$D/pid_2\" ]; do sleep 0.02; done\n"
                   "  echo 'loading shards' >&2\n"
                   "  echo 'error: boom from rank 1' >&2\n"
                   "  echo 'see the log for details' >&2\n"
                   "  exit 3\n"
                   "fi\n"
                   "sleep 30 & echo $! > \"$D/bg_$RANK\"\n"
                   "echo $$ > \"$D/tmp_$RANK\" && mv \"$D/tmp_$RANK\" \"$D/pid_$RANK\"\n"
                   "exec sleep 30\n",
               3);
  job.opts.grace_seconds = 1;
  const auto start = Clock::now();
  const LaunchResult res = job.run();
  const double elapsed = seconds_since(start);

  EXPECT_LT(elapsed, 8.0);
  EXPECT_EQ(res.exit_code, 3);
  EXPECT_EQ(res.failed_rank, 1);
  // The line starting with "error" is preferred over the last line.
  EXPECT_EQ(res.error, "rank 1 exited with code 3: error: boom from rank 1");
  EXPECT_NE(job.err.str().find("[rank 1] error: boom from rank 1\n"), std::string::npos);
  for (int k : {0, 2}) {
    const pid_t rank_pid = read_pid(dir / ("pid_" + std::to_string(k)));
    const pid_t bg_pid = read_pid(dir / ("bg_" + std::to_string(k)));
    ASSERT_GT(rank_pid, 0);
    ASSERT_GT(bg_pid, 0);
    // The rank itself was reaped by launch_local(); its background job, an
    // orphan by now, was sent SIGKILL with the rank's process group.
    EXPECT_TRUE(is_gone(rank_pid)) << "rank " << k << " still exists (not reaped?)";
    EXPECT_TRUE(stops_running_within(bg_pid, 2)) << "rank " << k << "'s background job runs on";
  }
}

TEST(Launch, RanksIgnoringSigtermAreKilledAfterTheGracePeriod) {
  testing::TempDir dir;
  ShellJob job("D='" + dir.str() +
                   "'\n"
                   "if [ \"$RANK\" = 0 ]; then\n"
                   "  while [ ! -e \"$D/pid_1\" ]; do sleep 0.02; done\n"
                   "  exit 5\n"
                   "fi\n"
                   "trap '' TERM\n"  // ignored signals stay ignored across exec
                   "echo $$ > \"$D/tmp\" && mv \"$D/tmp\" \"$D/pid_1\"\n"
                   "exec sleep 30\n",
               2);
  job.opts.grace_seconds = 0.5;
  const auto start = Clock::now();
  const LaunchResult res = job.run();
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.5);
  EXPECT_LT(elapsed, 8.0);
  EXPECT_EQ(res.exit_code, 5);
  EXPECT_EQ(res.failed_rank, 0);
  EXPECT_EQ(res.error, "rank 0 exited with code 5");
  EXPECT_TRUE(is_gone(read_pid(dir / "pid_1")));
}

TEST(Launch, RankKilledBySignalIsReportedAsKilledBySignal9) {
  ShellJob job("if [ \"$RANK\" = 1 ]; then kill -9 $$; fi; exec sleep 30", 2);
  const LaunchResult res = job.run();
  EXPECT_EQ(res.exit_code, 128 + 9);
  EXPECT_EQ(res.failed_rank, 1);
  EXPECT_EQ(res.error.rfind("rank 1 was killed by signal 9 (Killed)", 0), 0u) << res.error;
}

TEST(Launch, MissingExecutableExits127AndNamesThePath) {
  std::ostringstream out, err;
  LaunchOptions opts;
  opts.nproc = 3;
  opts.argv = {"/nonexistent/atoll-no-such-program", "--steps=1"};
  opts.out = &out;
  opts.err = &err;
  const LaunchResult res = launch_local(opts);
  EXPECT_EQ(res.exit_code, 127);
  EXPECT_EQ(res.failed_rank, 0);
  EXPECT_EQ(res.error,
            "rank 0 exited with code 127: cannot run "
            "'/nonexistent/atoll-no-such-program': No such file or directory");
  EXPECT_NE(err.str().find("[rank 0] cannot run '/nonexistent/atoll-no-such-program'"), std::string::npos);
  // The same program would fail for every rank: the others are not started.
  EXPECT_EQ(err.str().find("[rank 1]"), std::string::npos) << err.str();
}

TEST(Launch, LooksUpProgramNamesOnPath) {
  std::ostringstream out, err;
  LaunchOptions opts;
  opts.argv = {"sh", "-c", "echo found"};
  opts.out = &out;
  opts.err = &err;
  EXPECT_EQ(launch_local(opts).exit_code, 0);
  EXPECT_EQ(out.str(), "[rank 0] found\n");

  opts.argv = {"atoll-no-such-program-on-path"};
  const LaunchResult res = launch_local(opts);
  EXPECT_EQ(res.exit_code, 127);
  EXPECT_EQ(res.error,
            "rank 0 exited with code 127: cannot run "
            "'atoll-no-such-program-on-path': No such file or directory");
}

TEST(Launch, NonExecutableFileIsReportedAsPermissionDenied) {
  testing::TempDir dir;
  const std::string path = dir.write("not_executable.sh", "#!/bin/sh\necho hi\n");
  chmod(path.c_str(), 0644);
  std::ostringstream out, err;
  LaunchOptions opts;
  opts.argv = {path};
  opts.out = &out;
  opts.err = &err;
  const LaunchResult res = launch_local(opts);
  EXPECT_EQ(res.exit_code, 127);
  EXPECT_EQ(res.error, "rank 0 exited with code 127: cannot run '" + path + "': Permission denied");
}

TEST(Launch, RejectsInvalidOptions) {
  LaunchOptions ok;
  ok.argv = {"/bin/true"};
  auto message = [](LaunchOptions opts) { return invalid_argument_message([&] { launch_local(opts); }); };
  LaunchOptions o = ok;
  o.nproc = 0;
  EXPECT_NE(message(o).find("nproc must be between 1 and 1024, got 0"), std::string::npos);
  o = ok;
  o.nproc = 5000;
  EXPECT_NE(message(o).find("nproc must be between 1 and 1024"), std::string::npos);
  o = ok;
  o.argv.clear();
  EXPECT_NE(message(o).find("no program to run"), std::string::npos);
  o = ok;
  o.argv = {""};
  EXPECT_NE(message(o).find("no program to run"), std::string::npos);
  o = ok;
  o.master_port = 70000;
  EXPECT_NE(message(o).find("master_port must be 1..65535, or 0 to pick a free port, got 70000"), std::string::npos);
  o = ok;
  o.master_port = -1;
  EXPECT_NE(message(o).find("master_port must be 1..65535"), std::string::npos);
  o = ok;
  o.master_addr = "";
  EXPECT_NE(message(o).find("master_addr must be"), std::string::npos);
  o = ok;
  o.grace_seconds = -1;
  EXPECT_NE(message(o).find("grace_seconds must be a finite number >= 0"), std::string::npos);
  o = ok;
  o.grace_seconds = std::nan("");
  EXPECT_NE(message(o).find("grace_seconds must be a finite number >= 0"), std::string::npos);
}

TEST(Launch, RejectsASecondLaunchWhileOneIsRunning) {
  testing::TempDir dir;
  ShellJob job("touch '" + dir.str() + "/started'; sleep 0.5", 1);
  LaunchResult first;
  std::thread runner([&] { first = job.run(); });
  ASSERT_TRUE(wait_for_files({dir / "started"}, 5));
  LaunchOptions second;
  second.argv = {"/bin/true"};
  std::string message;
  try {
    launch_local(second);
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  runner.join();
  EXPECT_NE(message.find("already running"), std::string::npos) << message;
  EXPECT_EQ(first.exit_code, 0);
}

TEST(Launch, RestoresTheCallersSignalHandlers) {
  struct sigaction mine {
  }, old_term{}, old_int{}, old_chld{}, now{};
  mine.sa_handler = [](int) {};
  sigemptyset(&mine.sa_mask);
  sigaction(SIGCHLD, nullptr, &old_chld);
  sigaction(SIGTERM, &mine, &old_term);
  sigaction(SIGINT, &mine, &old_int);
  ShellJob job("exit 0", 2);
  EXPECT_EQ(job.run().exit_code, 0);
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, mine.sa_handler);
  sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, mine.sa_handler);
  sigaction(SIGCHLD, nullptr, &now);
  EXPECT_EQ(now.sa_handler, old_chld.sa_handler);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
}

// ---------------------------------------------------------------- signal forwarding

constexpr int kSignalRanks = 3;

// Ranks that trap `signal_name`, leave a marker got_<rank> when it arrives
// and then exit 0 (or, with `keep_running`, carry on). Each writes its pid
// to ready_<rank> once the trap is set.
LaunchOptions trapping_ranks(const testing::TempDir& dir, const std::string& signal_name, bool keep_running) {
  LaunchOptions opts;
  opts.nproc = kSignalRanks;
  opts.grace_seconds = keep_running ? 30 : 2;
  opts.argv = {"/bin/sh", "-c",
               "D='" + dir.str() +
                   "'\n"
                   "trap 'echo got > \"$D/got_$RANK\"" +
                   (keep_running ? "" : "; exit 0") + "' " + signal_name +
                   "\n"
                   "echo $$ > \"$D/tmp_$RANK\" && mv \"$D/tmp_$RANK\" \"$D/ready_$RANK\"\n"
                   "while :; do sleep 0.05; done\n"};
  return opts;
}

std::vector<std::string> rank_files(const testing::TempDir& dir, const std::string& stem) {
  std::vector<std::string> paths;
  for (int k = 0; k < kSignalRanks; ++k) paths.push_back(dir / (stem + std::to_string(k)));
  return paths;
}

// launch_local(opts) in a forked helper, so that signals can be sent to the
// launcher alone. The helper logs rank output to launcher.log, writes
// LaunchResult::error to `error` and exits with LaunchResult::exit_code.
// Whatever happens to the test, the destructor leaves no process behind.
class LauncherProcess {
 public:
  LauncherProcess(LaunchOptions opts, const testing::TempDir& dir) : dir_(dir) {
    pid_ = fork();
    if (pid_ != 0) return;
    // A test binary started as a background job of a non-interactive shell
    // (`atoll_tests &`) inherits SIGINT ignored, and the launcher keeps an
    // ignored signal ignored (nohup's meaning): these tests send it one.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    int code = 99;
    {
      std::ofstream log(dir / "launcher.log");
      opts.out = &log;
      opts.err = &log;
      std::string error;
      try {
        const LaunchResult res = launch_local(opts);
        code = res.exit_code;
        error = res.error;
      } catch (const std::exception& e) {
        error = std::string("exception: ") + e.what();
      }
      std::ofstream(dir / "error") << error;
    }
    _exit(code);  // no gtest teardown in the helper
  }
  ~LauncherProcess() {
    if (pid_ <= 0 || reaped_) return;
    // Ranks first: killed, the helper could no longer stop them (and the
    // SIGTERM they get when it dies may be trapped).
    kill_ranks();
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    kill_ranks();
  }
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;

  bool started() const { return pid_ > 0; }
  void signal(int signo) const { kill(pid_, signo); }
  std::string log() const { return read_text(dir_ / "launcher.log"); }

  // True once it has exited within `seconds` (reaped, status in *status).
  bool wait_exit(double seconds, int* status) {
    const auto start = Clock::now();
    while (seconds_since(start) < seconds) {
      if (waitpid(pid_, status, WNOHANG) == pid_) return reaped_ = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  void kill_ranks() const {
    for (const std::string& path : rank_files(dir_, "ready_")) {
      const pid_t rank = read_pid(path);
      if (rank > 0) kill(-rank, SIGKILL);  // each rank leads its own process group
    }
  }

  const testing::TempDir& dir_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

void expect_forwarded(int signo, const std::string& signal_name) {
  testing::TempDir dir;
  LauncherProcess launcher(trapping_ranks(dir, signal_name, false), dir);
  ASSERT_TRUE(launcher.started());
  ASSERT_TRUE(wait_for_files(rank_files(dir, "ready_"), 5)) << "ranks did not start: " << launcher.log();
  const auto start = Clock::now();
  launcher.signal(signo);
  int status = 0;
  ASSERT_TRUE(launcher.wait_exit(5, &status)) << "launcher did not exit after the signal";
  EXPECT_LT(seconds_since(start), 3.0);
  ASSERT_TRUE(WIFEXITED(status)) << "launcher died instead of handling the signal";
  EXPECT_EQ(WEXITSTATUS(status), 128 + signo);
  const std::string error = read_text(dir / "error");
  EXPECT_EQ(error.rfind("interrupted by signal " + std::to_string(signo), 0), 0u) << error;
  for (const std::string& marker : rank_files(dir, "got_")) {
    EXPECT_TRUE(std::filesystem::exists(marker)) << marker << ": no " << signal_name;
  }
}

TEST(LaunchSignals, SigtermToTheLauncherReachesEveryRank) { expect_forwarded(SIGTERM, "TERM"); }

TEST(LaunchSignals, SigintToTheLauncherReachesEveryRank) { expect_forwarded(SIGINT, "INT"); }

TEST(LaunchSignals, SecondSignalKillsRanksAtOnce) {
  testing::TempDir dir;
  // The ranks shrug SIGTERM off and the grace period is 30 s: only the
  // second signal's SIGKILL can end the job quickly.
  LauncherProcess launcher(trapping_ranks(dir, "TERM", true), dir);
  ASSERT_TRUE(launcher.started());
  ASSERT_TRUE(wait_for_files(rank_files(dir, "ready_"), 5)) << "ranks did not start: " << launcher.log();
  launcher.signal(SIGTERM);
  ASSERT_TRUE(wait_for_files(rank_files(dir, "got_"), 5)) << "the first SIGTERM was not forwarded";
  const auto start = Clock::now();
  launcher.signal(SIGTERM);
  int status = 0;
  ASSERT_TRUE(launcher.wait_exit(5, &status)) << "launcher did not exit after the second signal";
  EXPECT_LT(seconds_since(start), 3.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
}

}  // namespace
}  // namespace atl
