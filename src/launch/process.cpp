#include "launch/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <system_error>

extern char** environ;

namespace atl {

std::system_error sys_error(const std::string& what) { return std::system_error(errno, std::system_category(), what); }

namespace {

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

// A close-on-exec pipe (so no child inherits another child's pipe, which
// would keep it from ever reaching EOF); read end optionally non-blocking.
void make_pipe(int fds[2], bool nonblocking_read) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw sys_error("cannot create a pipe");
  fds[0] = above_stdio(fds[0]);
  fds[1] = above_stdio(fds[1]);
  if (fds[0] < 0 || fds[1] < 0 || (nonblocking_read && fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0)) {
    const int saved = errno;
    close_fd(fds[0]);
    close_fd(fds[1]);
    errno = saved;
    throw sys_error("cannot create a pipe");
  }
}

// spawn()'s fds, closed on every way out of it (those handed to the caller
// are set to -1 first).
struct SpawnFds {
  SpawnFds() = default;
  SpawnFds(const SpawnFds&) = delete;
  SpawnFds& operator=(const SpawnFds&) = delete;
  ~SpawnFds() {
    for (int* fd : {&devnull, &log, &out[0], &out[1], &err[0], &err[1], &status[0], &status[1]}) close_fd(*fd);
  }
  int devnull = -1, log = -1;
  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};  // pipes: [0] read, [1] write
};

// Runs in the child after fork(): async-signal-safe calls only. Never
// returns. out_fd/err_fd < 0: keep the parent's.
[[noreturn]] void exec_child(const ExecPlan& plan, char* const* envp, const SpawnOptions& options, pid_t parent,
                             int stdin_fd, int out_fd, int err_fd, int status_fd) {
  if (options.signals) options.signals->latch().reset_in_child();
  // Children start with nothing blocked, whatever the calling thread blocks:
  // a child with SIGTERM blocked could only be stopped by SIGKILL.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  setpgid(0, 0);
#if defined(__linux__)
  if (options.die_with_parent) {
    // Fires when the thread that forked us exits; the supervisors keep that
    // thread until every child is reaped, so only a dying parent triggers it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
  }
#else
  (void)parent;
#endif
  if (dup2(stdin_fd, 0) < 0 || (out_fd >= 0 && dup2(out_fd, 1) < 0) || (err_fd >= 0 && dup2(err_fd, 2) < 0)) {
    const int e = errno;
    (void)!write(status_fd, &e, sizeof(e));
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
    } else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ELOOP && error != ENAMETOOLONG) {
      break;
    }
  }
  if (denied && (error == ENOENT || error == ENOTDIR || error == EACCES)) error = EACCES;
  (void)!write(status_fd, &error, sizeof(error));
  _exit(127);
}

}  // namespace

// ---------------------------------------------------------------- signals

SignalScope::Pipe::Pipe() {
  int fds[2];
  make_pipe(fds, true);
  read_fd = fds[0];
  write_fd = fds[1];
  fcntl(write_fd, F_SETFL, O_NONBLOCK);  // the handler must never block
}

SignalScope::Pipe::~Pipe() {
  close_fd(write_fd);
  close_fd(read_fd);
}

SignalLatchOptions SignalScope::waking(SignalLatchOptions options, int wake_fd) {
  options.wake_fd = wake_fd;
  options.catch_child = true;
  return options;
}

SignalScope::SignalScope(SignalLatchOptions options) : latch_(waking(options, pipe_.write_fd)) {}

std::vector<int> SignalScope::take_signals() const {
  std::vector<int> got;
  unsigned char buf[64];
  ssize_t n;
  while ((n = read(pipe_.read_fd, buf, sizeof(buf))) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == SIGINT || buf[i] == SIGTERM) got.push_back(buf[i]);
    }
  }
  return got;
}

// ---------------------------------------------------------------- children

ExecPlan plan_exec(const std::vector<std::string>& argv) {
  ExecPlan plan;
  const std::string& name = argv[0];
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
  for (const std::string& a : argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  return plan;
}

Child spawn(const ExecPlan& plan, const SpawnOptions& options, OutputPipes* pipes) {
  std::vector<char*> envp;
  if (options.env) {
    for (const std::string& e : *options.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  SpawnFds fds;
  fds.devnull = above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (fds.devnull < 0) throw sys_error("cannot open /dev/null");
  int out_fd = -1, err_fd = -1;  // what the child's stdout/stderr become; -1: ours
  if (pipes) {
    make_pipe(fds.out, true);
    make_pipe(fds.err, true);
    out_fd = fds.out[1];
    err_fd = fds.err[1];
  } else if (!options.log_file.empty()) {
    fds.log = above_stdio(
        open(options.log_file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (options.append ? O_APPEND : O_TRUNC), 0644));
    if (fds.log < 0) throw sys_error("cannot open '" + options.log_file + "'");
    out_fd = err_fd = fds.log;
  }
  make_pipe(fds.status, false);

  // All signals blocked across fork(): the child must not run our handler
  // (it would write into our self-pipe) before resetting it.
  sigset_t all, caller_mask;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &caller_mask);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    exec_child(plan, options.env ? envp.data() : environ, options, parent, fds.devnull, out_fd, err_fd, fds.status[1]);
  }
  const int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  if (pid < 0) {
    errno = fork_errno;
    throw sys_error("fork failed");
  }
  setpgid(pid, pid);  // also done by the child; whichever runs first wins
  Child child;
  child.pid = pid;
  child.alive = true;
  // Our copies of the child's ends go now: the status pipe must see EOF at
  // exec, the output pipes at the child's exit.
  close_fd(fds.status[1]);
  close_fd(fds.out[1]);
  close_fd(fds.err[1]);
  if (pipes) {
    pipes->out = fds.out[0];
    pipes->err = fds.err[0];
    fds.out[0] = fds.err[0] = -1;
  }

  // EOF: exec succeeded (close-on-exec closed the pipe); an int: its errno.
  int exec_errno = 0;
  ssize_t n;
  while ((n = read(fds.status[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) child.exec_errno = exec_errno;
  return child;
}

bool reap(Child& child) {
  if (!child.alive) return false;
  const pid_t got = waitpid(child.pid, &child.status, WNOHANG);
  if (got == 0 || (got < 0 && errno == EINTR)) return false;
  child.alive = false;
  // ECHILD: reaped behind our back (cannot happen while a SignalScope is
  // alive, short of another thread calling waitpid(-1)).
  if (got < 0) child.status = W_EXITCODE(255, 0);
  return true;
}

void reap_blocking(Child& child) {
  if (!child.alive) return;
  while (waitpid(child.pid, &child.status, 0) < 0 && errno == EINTR) {
  }
  child.alive = false;
}

void signal_group(const Child& child, int signo) {
  if (child.pid <= 0) return;
  if (kill(-child.pid, signo) != 0 && child.alive) kill(child.pid, signo);
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace atl
