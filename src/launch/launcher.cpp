// `atoll launch`: start N ranks, relay their output line by line, stop the
// job on the first failure or on SIGINT/SIGTERM (see include/atoll/launch.h).
// Starting, reaping and signalling the ranks, and the signal wake-ups, are the
// process toolkit's (launch/process.h); this file is the job's policy.
//
// Each rank runs in a process group of its own and is stopped through it, so
// whatever a rank started goes with it; SIGINT/SIGTERM reach only the
// launcher, which forwards each to every rank exactly once. A launcher killed
// by SIGKILL cannot forward anything, so on Linux each rank asks for SIGTERM
// when the launcher dies (PR_SET_PDEATHSIG).
//
// The loop poll()s the signal scope's wake-up fd together with every rank's
// stdout/stderr; SIGCHLD only wakes it, and reap() looks at each rank. A
// signal ignored when launch_local() starts (nohup, `cmd &` in a script)
// stays ignored, for us and for the ranks.

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "atoll/launch.h"
#include "comm/job_token.h"
#include "launch/process.h"
#include "util/format.h"

extern char** environ;

namespace atl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxProcs = 1024;          // a sanity limit: each rank costs 2 fds
constexpr size_t kMaxLineBytes = 64 * 1024;  // longer lines are split, bounding memory
constexpr size_t kTailLines = 32;            // stderr lines kept per rank for the error
constexpr size_t kTailLineBytes = 1000;
// poll() wakes on output and (via SIGCHLD) on exits; the cap is only a safety
// net should a wake-up be lost.
constexpr int kPollCapMs = 100;

std::string errno_text(int err) { return std::system_category().message(err); }

std::string signal_text(int signo) {
  const char* name = strsignal(signo);
  return "signal " + std::to_string(signo) + " (" + (name ? name : "unknown") + ")";
}

// ---------------------------------------------------------------- options

void validate(const LaunchOptions& opts) {
  if (opts.nproc < 1 || opts.nproc > kMaxProcs) {
    throw std::invalid_argument("launch: nproc must be between 1 and " + std::to_string(kMaxProcs) + ", got " +
                                std::to_string(opts.nproc));
  }
  if (opts.argv.empty() || opts.argv[0].empty()) {
    throw std::invalid_argument(
        "launch: no program to run (argv must start with a program "
        "path or a name found on PATH)");
  }
  if (opts.max_restarts < 0) throw std::invalid_argument("launch: max_restarts must be >= 0");
  if (opts.master_port < 0 || opts.master_port > 65535) {
    throw std::invalid_argument(
        "launch: master_port must be 1..65535, or 0 to pick a free "
        "port, got " +
        std::to_string(opts.master_port));
  }
  if (opts.nnodes < 1 || opts.node_rank < 0 || opts.node_rank >= opts.nnodes) {
    throw std::invalid_argument("launch: nnodes must be >= 1 and node_rank in 0..nnodes-1, got nnodes " +
                                std::to_string(opts.nnodes) + " and node_rank " + std::to_string(opts.node_rank));
  }
  if (opts.nnodes > 1 && opts.master_port == 0) {
    throw std::invalid_argument(
        "launch: with nnodes > 1 every host must name the same master_port; "
        "pass one (e.g. 29500) instead of 0");
  }
  if (opts.master_addr.empty()) {
    throw std::invalid_argument(
        "launch: master_addr must be a host name or address, "
        "e.g. 127.0.0.1");
  }
  if (!(opts.grace_seconds >= 0) || !std::isfinite(opts.grace_seconds)) {
    throw std::invalid_argument("launch: grace_seconds must be a finite number >= 0, got " +
                                std::to_string(opts.grace_seconds));
  }
}

// One launch_local() at a time: the signal handlers are process-wide.
std::atomic<bool> g_busy{false};

// ---------------------------------------------------------------- ranks

// One child pipe: splits bytes into lines, writes each as "[rank k] line\n".
// '\r' also ends a line (progress bars redraw with it); "\r\n" is one end.
struct Stream {
  int fd = -1;
  bool is_err = false;
  std::string partial;
  bool cr_ended_line = false;  // the last byte was a '\r' that ended a non-empty line
};

struct Rank {
  int64_t index = 0;
  Child child;
  std::string prefix;
  Stream out, err;
  std::deque<std::string> err_tail;  // last non-empty stderr lines
};

// The stderr line that best explains a failure: the last one that starts with
// "error" (any case), else the last non-empty one.
std::string quote_of(const Rank& r) {
  for (auto it = r.err_tail.rbegin(); it != r.err_tail.rend(); ++it) {
    std::string head = it->substr(0, 5);
    std::transform(head.begin(), head.end(), head.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (head == "error") return *it;
  }
  return r.err_tail.empty() ? "" : r.err_tail.back();
}

bool exited_ok(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The parent's environment with the torchrun variables replaced.
std::vector<std::string> rank_environment(const LaunchOptions& opts, int port, int64_t rank, int64_t restart) {
  std::vector<std::pair<std::string, std::string>> added = {
      {"RANK", std::to_string(opts.node_rank * opts.nproc + rank)},
      {"LOCAL_RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(opts.nnodes * opts.nproc)},
      {"LOCAL_WORLD_SIZE", std::to_string(opts.nproc)},
      {"GROUP_RANK", std::to_string(opts.node_rank)},
      {"MASTER_ADDR", opts.master_addr},
      {"MASTER_PORT", std::to_string(port)},
      // As torchrun: how often the job was restarted; atoll train then
      // resumes from the newest checkpoint.
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(restart)}};
  std::vector<std::pair<std::string, std::string>> token;
  if (!opts.job_token.empty()) token = {{"ATOLL_JOB_TOKEN", opts.job_token}};
  added.insert(added.end(), token.begin(), token.end());
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(added.begin(), added.end(), [&](const auto& kv) {
      return entry.compare(0, kv.first.size() + 1, kv.first + "=") == 0;
    });
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [key, value] : added) env.push_back(key + "=" + value);
  return env;
}

// ---------------------------------------------------------------- the job

class Launcher {
 public:
  Launcher(const LaunchOptions& opts, int port, const SignalScope& signals, int64_t restart)
      : opts_(opts),
        port_(port),
        restart_(restart),
        signals_(signals),
        out_(opts.out ? opts.out : &std::cout),
        err_(opts.err ? opts.err : &std::cerr) {}

  // Safety net for exceptions: nothing may outlive launch_local().
  ~Launcher() {
    for (Rank& r : ranks_) {
      if (r.child.alive) {
        signal_group(r.child, SIGKILL);
        reap_blocking(r.child);
      }
      close_fd(r.out.fd);
      close_fd(r.err.fd);
    }
  }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  LaunchResult run() {
    const ExecPlan plan = plan_exec(opts_.argv);
    ranks_.resize(static_cast<size_t>(opts_.nproc));
    std::string start_error;
    for (int64_t k = 0; k < opts_.nproc; ++k) {
      Rank& r = ranks_[static_cast<size_t>(k)];
      r.index = k;
      r.prefix = "[rank " + std::to_string(opts_.node_rank * opts_.nproc + k) + "] ";
      try {
        // Every rank runs the same program: when rank k cannot be executed
        // the others cannot either, so stop starting them.
        if (!spawn(r, plan)) break;
      } catch (const std::exception& e) {
        start_error = "launch: cannot start rank " + std::to_string(k) + ": " + e.what();
        begin_shutdown(SIGTERM);
        break;
      }
    }
    loop();
    finish();
    if (!start_error.empty()) throw std::runtime_error(start_error);
    return result();
  }

 private:
  // Starts one rank; false when its program could not be executed (the
  // child exits 127 and is reaped as a failure like any other).
  bool spawn(Rank& r, const ExecPlan& plan) {
    const std::vector<std::string> env = rank_environment(opts_, port_, r.index, restart_);
    SpawnOptions how;
    how.env = &env;
    how.die_with_parent = true;
    how.signals = &signals_;
    OutputPipes pipes;
    r.child = atl::spawn(plan, how, &pipes);
    r.out.fd = pipes.out;
    r.err.fd = pipes.err;
    r.err.is_err = true;
    if (r.child.exec_errno == 0) return true;
    // Reported as the rank's own stderr, so it reads like any other failure.
    emit(r, r.err, "cannot run '" + opts_.argv[0] + "': " + errno_text(r.child.exec_errno));
    flush();
    return false;
  }

  bool any_alive() const {
    return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.child.alive; });
  }

  void loop() {
    std::vector<pollfd> fds;
    std::vector<Stream*> streams;
    std::vector<Rank*> owners;
    while (any_alive()) {
      int timeout = kPollCapMs;
      if (shutting_down_ && !killed_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count() + 1;
        timeout = static_cast<int>(std::clamp<int64_t>(left, 0, kPollCapMs));
      }
      fds.assign(1, pollfd{signals_.wake_fd(), POLLIN, 0});
      streams.clear();
      owners.clear();
      for (Rank& r : ranks_) {
        for (Stream* s : {&r.out, &r.err}) {
          if (s->fd < 0) continue;
          fds.push_back(pollfd{s->fd, POLLIN, 0});
          streams.push_back(s);
          owners.push_back(&r);
        }
      }
      if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
        throw sys_error("launch: poll failed");
      }
      if (fds[0].revents) read_signals();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents) read_some(*owners[i - 1], *streams[i - 1]);
      }
      flush();
      reap();
      if (shutting_down_ && !killed_ && Clock::now() >= deadline_) kill_all();
    }
  }

  void read_signals() {
    for (const int signo : signals_.take_signals()) {  // SIGCHLD is not there: reap() looks
      if (shutting_down_) {
        kill_all();  // asked twice: stop waiting for a graceful exit
      } else {
        if (failed_ < 0) interrupted_by_ = signo;
        begin_shutdown(signo);
      }
    }
  }

  // One read per wake-up keeps a chatty rank from starving the others.
  // Closes the stream at EOF (or on a read error).
  void read_some(Rank& r, Stream& s) {
    char buf[65536];
    ssize_t n;
    while ((n = read(s.fd, buf, sizeof(buf))) < 0 && errno == EINTR) {
    }
    if (n > 0) {
      feed(r, s, buf, static_cast<size_t>(n));
      return;
    }
    if (n < 0 && errno == EAGAIN) return;
    if (!s.partial.empty()) emit(r, s, s.partial);  // a last line without '\n'
    s.partial.clear();
    close_fd(s.fd);
  }

  void feed(Rank& r, Stream& s, const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      const char c = data[i];
      if (c == '\n') {
        if (!s.cr_ended_line) emit(r, s, s.partial);  // may be an intended blank line
        s.partial.clear();
        s.cr_ended_line = false;
      } else if (c == '\r') {
        // Redraws start with '\r' too: an empty segment is not a line.
        s.cr_ended_line = !s.partial.empty();
        if (s.cr_ended_line) emit(r, s, s.partial);
        s.partial.clear();
      } else {
        s.cr_ended_line = false;
        s.partial.push_back(c);
        if (s.partial.size() >= kMaxLineBytes) {
          emit(r, s, s.partial);
          s.partial.clear();
        }
      }
    }
  }

  // Whole lines only, from this one thread: ranks interleave by line, never
  // within one.
  void emit(Rank& r, const Stream& s, const std::string& line) {
    std::ostream& os = s.is_err ? *err_ : *out_;
    os << r.prefix << line << '\n';
    if (!s.is_err) return;
    std::string kept = trim(line);
    if (kept.empty()) return;
    if (kept.size() > kTailLineBytes) kept = kept.substr(0, kTailLineBytes) + "...";
    r.err_tail.push_back(std::move(kept));
    if (r.err_tail.size() > kTailLines) r.err_tail.pop_front();
  }

  void flush() {
    out_->flush();
    err_->flush();
  }

  void reap() {
    for (Rank& r : ranks_) {
      if (!atl::reap(r.child)) continue;
      // Exits after we asked ranks to stop are consequences, not failures.
      if (!exited_ok(r.child.status) && !shutting_down_) {
        failed_ = r.index;
        begin_shutdown(SIGTERM);
      }
    }
  }

  void begin_shutdown(int signo) {
    shutting_down_ = true;
    deadline_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts_.grace_seconds));
    for (const Rank& r : ranks_) {
      if (r.child.alive) signal_group(r.child, signo);
    }
  }

  void kill_all() {
    killed_ = true;
    for (const Rank& r : ranks_) signal_group(r.child, SIGKILL);
  }

  // Every rank has been reaped: collect the output still in the pipes (a
  // rank's last words are there before its exit is reported), then end what
  // the ranks left behind in their groups. The pipes may be held open by
  // those leftovers, so don't wait for EOF.
  void finish() {
    for (Rank& r : ranks_) {
      for (Stream* s : {&r.out, &r.err}) {
        // Bounded: a leftover could keep writing forever. 64 reads cover
        // even a pipe enlarged to 1 MiB with F_SETPIPE_SZ.
        for (int i = 0; i < 64 && s->fd >= 0; ++i) {
          pollfd p{s->fd, POLLIN, 0};
          if (poll(&p, 1, 0) <= 0) break;
          read_some(r, *s);
        }
        if (s->fd >= 0) {
          if (!s->partial.empty()) emit(r, *s, s->partial);
          s->partial.clear();
          close_fd(s->fd);
        }
      }
    }
    flush();
    // Leftovers (background jobs a rank did not wait for) would be orphans.
    // After a failure or a signal they already had SIGTERM with their rank.
    for (const Rank& r : ranks_) signal_group(r.child, shutting_down_ ? SIGKILL : SIGTERM);
  }

  LaunchResult result() const {
    LaunchResult res;
    if (failed_ >= 0) {
      const Rank& r = ranks_[static_cast<size_t>(failed_)];
      res.failed_rank = failed_;
      res.exit_code = exit_code_of(r.child.status);
      res.error = "rank " + std::to_string(r.index);
      if (WIFSIGNALED(r.child.status)) {
        res.error += " was killed by " + signal_text(WTERMSIG(r.child.status));
      } else {
        res.error += " exited with code " + std::to_string(res.exit_code);
      }
      const std::string quote = quote_of(r);
      if (!quote.empty()) res.error += ": " + quote;
    } else if (interrupted_by_ != 0) {
      res.exit_code = 128 + interrupted_by_;
      res.error = "interrupted by " + signal_text(interrupted_by_);
    }
    return res;
  }

  const LaunchOptions& opts_;
  const int port_;
  const int64_t restart_;
  const SignalScope& signals_;
  std::ostream* out_;
  std::ostream* err_;
  std::vector<Rank> ranks_;
  bool shutting_down_ = false;  // SIGTERM/SIGINT sent; exits from now on are not failures
  bool killed_ = false;         // SIGKILL sent
  Clock::time_point deadline_{};
  int64_t failed_ = -1;
  int interrupted_by_ = 0;
};

}  // namespace

// Asks the kernel for a free port by binding port 0. Another process may take
// it before rank 0 listens (torchrun has the same race); the ranks' own
// rendezvous then fails loudly rather than silently.
int pick_free_port(const std::string& addr) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(addr.c_str(), "0", &hints, &found); rc != 0) {
    throw std::runtime_error("launch: cannot resolve master_addr '" + addr + "': " + gai_strerror(rc));
  }
  int port = 0, last_errno = 0;
  for (addrinfo* ai = found; ai && port == 0; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      last_errno = errno;
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (port == 0) {
    throw std::runtime_error("launch: cannot pick a free port on '" + addr + "': " + errno_text(last_errno) +
                             " (is it an address of this host?)");
  }
  return port;
}

LaunchResult launch_local(const LaunchOptions& given) {
  validate(given);
  LaunchOptions opts = given;
  // A one-host job gets a job token of its own (every rank is a child of
  // this process), so no other local user or process can join its
  // rendezvous; a job across hosts needs the same token on each, given.
  if (opts.job_token.empty() && opts.nnodes == 1 && std::getenv("ATOLL_JOB_TOKEN") == nullptr &&
      std::getenv("ATOLL_JOB_TOKEN_FILE") == nullptr)
    opts.job_token = to_hex(random_bytes(kJobTokenBytes));
  if (g_busy.exchange(true)) {
    throw std::runtime_error(
        "launch: another launch_local() is already running in this "
        "process");
  }
  struct Release {
    ~Release() { g_busy.store(false); }
  } release;
  std::ostream& err = opts.err ? *opts.err : std::cerr;
  for (int64_t restart = 0;; ++restart) {
    const int port = opts.master_port != 0 ? opts.master_port : pick_free_port(opts.master_addr);
    LaunchResult result;
    {
      SignalLatchOptions caught;
      caught.keep_ignored = true;
      SignalScope signals(caught);
      Launcher launcher(opts, port, signals, restart);  // destroyed (children reaped) before signals
      result = launcher.run();
    }
    result.restarts = restart;
    // A rank failed (not an interrupt): run the job again while restarts are left.
    if (result.exit_code == 0 || result.failed_rank < 0 || restart >= opts.max_restarts) return result;
    err << "[launcher] " << result.error << "; restarting the job (" << restart + 1 << " of " << opts.max_restarts
        << ")" << std::endl;
  }
}

}  // namespace atl
