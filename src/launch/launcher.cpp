// `atoll launch`: fork+exec N ranks, relay their output line by line, stop the
// job on the first failure or on SIGINT/SIGTERM (see include/atoll/launch.h).
//
// Process groups: every rank gets its own process group (setpgid in both the
// parent and the child, so neither can signal it before it exists). Then
//  - a signal to the group, kill(-pgid), also reaches whatever the rank
//    started itself (the `sleep` under `sh -c '...'`, data-loader helpers),
//    so stopping a job leaves no orphans behind a dead rank;
//  - Ctrl-C at a terminal reaches only the launcher (the ranks are not in the
//    foreground group), which forwards it exactly once: each rank sees one
//    SIGINT whether it came from the terminal or from `kill -INT <launcher>`.
//    Were the signal delivered twice, a second SIGINT during a rank's cleanup
//    would often abort that cleanup.
// The costs: a rank reading the terminal would be stopped by SIGTTIN, so
// ranks get stdin from /dev/null; and a launcher killed by SIGKILL cannot
// forward anything, so on Linux each rank asks for SIGTERM when the launcher
// dies (PR_SET_PDEATHSIG).
//
// Signals: while launch_local() runs, SIGINT/SIGTERM/SIGCHLD handlers write
// the signal number to a non-blocking self-pipe (write() is async-signal-safe)
// and the loop poll()s that pipe together with every rank's stdout/stderr.
// SIGCHLD only wakes the loop; exits are collected with waitpid(pid, WNOHANG)
// for our own pids, never waitpid(-1), so other children of the process are
// left alone. A signal ignored when launch_local() starts (nohup, `cmd &` in
// a script) stays ignored, for us and for the ranks.
//
// Between fork() and exec the child only makes async-signal-safe calls (the
// caller may have other threads): argv, envp and PATH candidates are built
// beforehand, and an exec failure travels back as an errno over a
// close-on-exec pipe so the parent words the error message.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "atoll/launch.h"

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

std::system_error sys_error(const std::string& what) {
  return std::system_error(errno, std::system_category(), what);
}

// ---------------------------------------------------------------- fds

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Moves a fresh fd to >= 3 (keeping close-on-exec): if the caller had closed
// stdin/stdout/stderr, a pipe could land on 0..2 and the child's dup2() onto
// that same number would be a no-op that keeps FD_CLOEXEC set.
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int saved = errno;
  close(fd);
  errno = saved;
  return moved;
}

// A close-on-exec pipe (so no rank inherits another rank's pipe, which would
// keep it from ever reaching EOF); read end optionally non-blocking.
void make_pipe(int fds[2], bool nonblocking_read) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw sys_error("cannot create a pipe");
  fds[0] = above_stdio(fds[0]);
  fds[1] = above_stdio(fds[1]);
  if (fds[0] < 0 || fds[1] < 0 ||
      (nonblocking_read && fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0)) {
    const int saved = errno;
    close_fd(fds[0]);
    close_fd(fds[1]);
    errno = saved;
    throw sys_error("cannot create a pipe");
  }
}

// ---------------------------------------------------------------- options

void validate(const LaunchOptions& opts) {
  if (opts.nproc < 1 || opts.nproc > kMaxProcs) {
    throw std::invalid_argument("launch: nproc must be between 1 and " +
                                std::to_string(kMaxProcs) + ", got " +
                                std::to_string(opts.nproc));
  }
  if (opts.argv.empty() || opts.argv[0].empty()) {
    throw std::invalid_argument("launch: no program to run (argv must start with a program "
                                "path or a name found on PATH)");
  }
  if (opts.max_restarts < 0) throw std::invalid_argument("launch: max_restarts must be >= 0");
  if (opts.master_port < 0 || opts.master_port > 65535) {
    throw std::invalid_argument("launch: master_port must be 1..65535, or 0 to pick a free "
                                "port, got " + std::to_string(opts.master_port));
  }
  if (opts.nnodes < 1 || opts.node_rank < 0 || opts.node_rank >= opts.nnodes) {
    throw std::invalid_argument("launch: nnodes must be >= 1 and node_rank in 0..nnodes-1, got nnodes " +
                                std::to_string(opts.nnodes) + " and node_rank " +
                                std::to_string(opts.node_rank));
  }
  if (opts.nnodes > 1 && opts.master_port == 0) {
    throw std::invalid_argument("launch: with nnodes > 1 every host must name the same master_port; "
                                "pass one (e.g. 29500) instead of 0");
  }
  if (opts.master_addr.empty()) {
    throw std::invalid_argument("launch: master_addr must be a host name or address, "
                                "e.g. 127.0.0.1");
  }
  if (!(opts.grace_seconds >= 0) || !std::isfinite(opts.grace_seconds)) {
    throw std::invalid_argument("launch: grace_seconds must be a finite number >= 0, got " +
                                std::to_string(opts.grace_seconds));
  }
}


// ---------------------------------------------------------------- signals

std::atomic<bool> g_busy{false};
std::atomic<int> g_wake_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads g_wake_fd");

void wake_on_signal(int signo) {
  const int saved = errno;
  const int fd = g_wake_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    // A full pipe (EAGAIN) already guarantees a wake-up; nothing else to do.
    const unsigned char byte = static_cast<unsigned char>(signo);
    const ssize_t written = write(fd, &byte, 1);
    (void)written;
  }
  errno = saved;
}

// Owns the self-pipe and the handlers; restores the caller's handlers on
// destruction.
class SignalScope {
 public:
  SignalScope() {
    int fds[2];
    make_pipe(fds, true);
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    fcntl(write_fd_, F_SETFL, O_NONBLOCK);  // the handler must never block
    g_wake_fd.store(write_fd_);
    for (Saved& s : saved_) {
      sigaction(s.signo, nullptr, &s.old);
      const bool ignored = !(s.old.sa_flags & SA_SIGINFO) && s.old.sa_handler == SIG_IGN;
      // SIGCHLD is needed even if ignored: SIG_IGN would reap ranks for us.
      s.installed = s.signo == SIGCHLD || !ignored;
      if (!s.installed) continue;
      // What a new rank starts with: SIG_IGN if the caller ignored it, else
      // SIG_DFL (exec resets handlers anyway, but ours must not run in the
      // child before exec).
      s.child = {};
      s.child.sa_handler = ignored ? SIG_IGN : SIG_DFL;
      sigemptyset(&s.child.sa_mask);
      struct sigaction act {};
      act.sa_handler = wake_on_signal;
      sigemptyset(&act.sa_mask);
      // SA_RESTART: the caller's other threads should not see EINTR from us.
      act.sa_flags = SA_RESTART | (s.signo == SIGCHLD ? SA_NOCLDSTOP : 0);
      sigaction(s.signo, &act, nullptr);
    }
  }
  ~SignalScope() {
    for (const Saved& s : saved_) {
      if (s.installed) sigaction(s.signo, &s.old, nullptr);
    }
    g_wake_fd.store(-1);
    close_fd(write_fd_);
    close_fd(read_fd_);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  int wake_fd() const { return read_fd_; }

  // Async-signal-safe; called in the child between fork and exec, with every
  // signal blocked.
  void reset_in_child() const {
    for (const Saved& s : saved_) {
      if (s.installed) sigaction(s.signo, &s.child, nullptr);
    }
  }

 private:
  struct Saved {
    int signo;
    bool installed = false;
    struct sigaction old {};
    struct sigaction child {};
  };
  std::array<Saved, 3> saved_{{{SIGINT}, {SIGTERM}, {SIGCHLD}}};
  int read_fd_ = -1, write_fd_ = -1;
};

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
  pid_t pid = -1;
  bool alive = false;  // started and not yet reaped
  int status = 0;
  std::string prefix;
  Stream out, err;
  std::deque<std::string> err_tail;  // last non-empty stderr lines
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

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

// What the child needs between fork and exec, built beforehand.
struct ExecPlan {
  std::vector<std::string> candidates;  // paths to try in order, as execvp would
  std::vector<char*> argv;              // null-terminated, points into opts.argv
};

ExecPlan plan_exec(const std::vector<std::string>& args) {
  ExecPlan plan;
  const std::string& name = args[0];
  if (name.find('/') != std::string::npos) {
    plan.candidates.push_back(name);
  } else {
    const char* env_path = getenv("PATH");
    const std::string path = env_path ? env_path : "/bin:/usr/bin";  // glibc's default
    size_t start = 0;
    while (true) {
      const size_t end = path.find(':', start);
      std::string dir = path.substr(start, end == std::string::npos ? end : end - start);
      plan.candidates.push_back((dir.empty() ? "." : dir) + "/" + name);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  for (const std::string& a : args) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  return plan;
}

// The parent's environment with the torchrun variables replaced.
std::vector<std::string> rank_environment(const LaunchOptions& opts, int port, int64_t rank, int64_t restart) {
  const std::vector<std::pair<std::string, std::string>> added = {
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

// Runs in the child after fork(): async-signal-safe calls only. Never returns.
[[noreturn]] void exec_child(const SignalScope& signals, pid_t launcher, int stdin_fd,
                             int out_fd, int err_fd, int status_fd, const ExecPlan& plan,
                             char* const* envp) {
  signals.reset_in_child();
  // Ranks start with nothing blocked, whatever the calling thread blocks:
  // a rank with SIGTERM blocked could only be stopped by SIGKILL.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setpgid(0, 0);
#if defined(__linux__)
  // Fires when the thread that forked us exits; launch_local() keeps that
  // thread until every rank is reaped, so only a dying launcher triggers it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) _exit(127);  // the launcher died before prctl
#else
  (void)launcher;
#endif
  if (dup2(stdin_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
    const int e = errno;
    const ssize_t w = write(status_fd, &e, sizeof(e));
    (void)w;
    _exit(127);
  }
  // execvp's search, without its allocation: EACCES from any candidate wins
  // over "not found"; other errors (ENOEXEC, E2BIG...) stop the search.
  int error = ENOENT;
  bool denied = false;
  for (const std::string& path : plan.candidates) {
    execve(path.c_str(), plan.argv.data(), envp);
    error = errno;
    if (error == EACCES) {
      denied = true;
    } else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ELOOP &&
               error != ENAMETOOLONG) {
      break;
    }
  }
  if (denied && (error == ENOENT || error == ENOTDIR || error == EACCES)) error = EACCES;
  const ssize_t w = write(status_fd, &error, sizeof(error));
  (void)w;
  _exit(127);
}

// ---------------------------------------------------------------- the job

class Launcher {
 public:
  Launcher(const LaunchOptions& opts, int port, const SignalScope& signals, int64_t restart)
      : opts_(opts), port_(port), restart_(restart), signals_(signals),
        out_(opts.out ? opts.out : &std::cout), err_(opts.err ? opts.err : &std::cerr) {}

  // Safety net for exceptions: nothing may outlive launch_local().
  ~Launcher() {
    for (Rank& r : ranks_) {
      if (r.alive) {
        signal_group(r, SIGKILL);
        while (waitpid(r.pid, &r.status, 0) < 0 && errno == EINTR) {
        }
      }
      close_fd(r.out.fd);
      close_fd(r.err.fd);
    }
    close_fd(devnull_);
  }
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  LaunchResult run() {
    devnull_ = above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (devnull_ < 0) throw sys_error("launch: cannot open /dev/null");
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
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);

    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, status_pipe[2] = {-1, -1};
    try {
      make_pipe(out_pipe, true);
      make_pipe(err_pipe, true);
      make_pipe(status_pipe, false);
    } catch (...) {
      for (int* p : {out_pipe, err_pipe, status_pipe}) {
        close_fd(p[0]);
        close_fd(p[1]);
      }
      throw;
    }
    r.out.fd = out_pipe[0];
    r.err.fd = err_pipe[0];
    r.err.is_err = true;

    // All signals blocked across fork(): the child must not run our handler
    // (it would write into the launcher's self-pipe) before resetting it.
    sigset_t all, caller_mask;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &caller_mask);
    const pid_t launcher = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      exec_child(signals_, launcher, devnull_, out_pipe[1], err_pipe[1], status_pipe[1], plan,
                 envp.data());
    }
    const int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    close_fd(status_pipe[1]);
    if (pid < 0) {
      close_fd(status_pipe[0]);
      errno = fork_errno;
      throw sys_error("fork failed");
    }
    setpgid(pid, pid);  // also done by the child; whichever runs first wins
    r.pid = pid;
    r.alive = true;

    // EOF: exec succeeded (close-on-exec closed the pipe); an int: its errno.
    int exec_errno = 0;
    ssize_t n;
    while ((n = read(status_pipe[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
    }
    close_fd(status_pipe[0]);
    if (n != static_cast<ssize_t>(sizeof(exec_errno))) return true;
    // Reported as the rank's own stderr, so it reads like any other failure.
    emit(r, r.err, "cannot run '" + opts_.argv[0] + "': " + errno_text(exec_errno));
    flush();
    return false;
  }

  bool any_alive() const {
    return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.alive; });
  }

  void loop() {
    std::vector<pollfd> fds;
    std::vector<Stream*> streams;
    std::vector<Rank*> owners;
    while (any_alive()) {
      int timeout = kPollCapMs;
      if (shutting_down_ && !killed_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline_ - Clock::now()).count() + 1;
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
    unsigned char buf[64];
    ssize_t n;
    while ((n = read(signals_.wake_fd(), buf, sizeof(buf))) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        const int signo = buf[i];
        if (signo != SIGINT && signo != SIGTERM) continue;  // SIGCHLD: reap() looks
        if (shutting_down_) {
          kill_all();  // asked twice: stop waiting for a graceful exit
        } else {
          if (failed_ < 0) interrupted_by_ = signo;
          begin_shutdown(signo);
        }
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
      if (!r.alive) continue;
      const pid_t got = waitpid(r.pid, &r.status, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) continue;
      r.alive = false;
      // ECHILD: reaped behind our back (cannot happen while our SIGCHLD
      // handler is installed, short of another thread calling waitpid(-1)).
      if (got < 0) r.status = W_EXITCODE(255, 0);
      // Exits after we asked ranks to stop are consequences, not failures.
      if (!exited_ok(r.status) && !shutting_down_) {
        failed_ = r.index;
        begin_shutdown(SIGTERM);
      }
    }
  }

  void signal_group(const Rank& r, int signo) {
    if (r.pid <= 0) return;
    if (kill(-r.pid, signo) != 0 && r.alive) kill(r.pid, signo);
  }

  void begin_shutdown(int signo) {
    shutting_down_ = true;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(opts_.grace_seconds));
    for (const Rank& r : ranks_) {
      if (r.alive) signal_group(r, signo);
    }
  }

  void kill_all() {
    killed_ = true;
    for (const Rank& r : ranks_) signal_group(r, SIGKILL);
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
    for (const Rank& r : ranks_) {
      if (r.pid > 0) kill(-r.pid, shutting_down_ ? SIGKILL : SIGTERM);
    }
  }

  LaunchResult result() const {
    LaunchResult res;
    if (failed_ >= 0) {
      const Rank& r = ranks_[static_cast<size_t>(failed_)];
      res.failed_rank = failed_;
      res.exit_code = exit_code_of(r.status);
      res.error = "rank " + std::to_string(r.index);
      if (WIFSIGNALED(r.status)) {
        res.error += " was killed by " + signal_text(WTERMSIG(r.status));
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
  int devnull_ = -1;
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
    throw std::runtime_error("launch: cannot resolve master_addr '" + addr +
                             "': " + gai_strerror(rc));
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
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      port = bound.ss_family == AF_INET6
                 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                 : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else {
      last_errno = errno;
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (port == 0) {
    throw std::runtime_error("launch: cannot pick a free port on '" + addr + "': " +
                             errno_text(last_errno) + " (is it an address of this host?)");
  }
  return port;
}

LaunchResult launch_local(const LaunchOptions& opts) {
  validate(opts);
  if (g_busy.exchange(true)) {
    throw std::runtime_error("launch: another launch_local() is already running in this "
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
      SignalScope signals;
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
