// The process toolkit behind `atoll launch` and `atoll sweep`: start a child
// (fork + exec), collect its exit, signal its process group, and wake the
// supervising loop on SIGINT/SIGTERM/SIGCHLD. POSIX only.
//
// Process groups: every child gets its own (setpgid in both the parent and
// the child, so neither can signal it before it exists). Then
//  - a signal to the group, kill(-pgid), also reaches whatever the child
//    started itself (the `sleep` under `sh -c '...'`), so stopping it leaves
//    no orphans behind;
//  - Ctrl-C at a terminal reaches only the supervisor (the children are not
//    in the foreground group), which forwards it exactly once. Were it
//    delivered twice, a second SIGINT during a child's cleanup would often
//    abort that cleanup.
// The cost: a child reading the terminal would be stopped by SIGTTIN, so
// children get stdin from /dev/null.
//
// Exits are collected with waitpid(pid, WNOHANG) for our own pids, never
// waitpid(-1), so other children of the process are left alone.
//
// Between fork() and exec the child only makes async-signal-safe calls (the
// caller may have other threads): argv, envp and PATH candidates are built
// beforehand, and an exec failure travels back as an errno over a
// close-on-exec pipe so the parent words the error message.
#pragma once

#include <sys/types.h>

#include <string>
#include <system_error>
#include <vector>

#include "util/signal_latch.h"

namespace atl {

// A std::system_error for the failed call `what`, carrying errno.
std::system_error sys_error(const std::string& what);

// While alive, SIGINT/SIGTERM/SIGCHLD write their number to a non-blocking
// self-pipe that the supervising loop poll()s with its other fds. SIGCHLD
// only wakes the loop (the loop then reaps); what SIGINT/SIGTERM do besides
// (a note, a fatal second one, staying ignored) is up to `options`, whose
// wake_fd and catch_child are set here. Restores the previous handlers after.
class SignalScope {
 public:
  explicit SignalScope(SignalLatchOptions options);
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Readable when a signal arrived.
  int wake_fd() const { return pipe_.read_fd; }
  // Drains the pipe without blocking: the SIGINT/SIGTERM caught since the
  // last call, oldest first.
  std::vector<int> take_signals() const;
  const SignalLatch& latch() const { return latch_; }

 private:
  struct Pipe {
    Pipe();
    ~Pipe();
    int read_fd = -1, write_fd = -1;
  };
  static SignalLatchOptions waking(SignalLatchOptions options, int wake_fd);

  Pipe pipe_;  // made before the latch writes to it, closed after it is gone
  SignalLatch latch_;
};

// What a child runs, prepared before fork() (the child must not allocate):
// the paths execvp would try, in order, and argv.
struct ExecPlan {
  std::vector<std::string> candidates;
  std::vector<char*> argv;  // null-terminated; points into the strings plan_exec() got
};

// argv[0] without a '/' is looked up on PATH as execvp does. The strings must
// outlive the plan.
ExecPlan plan_exec(const std::vector<std::string>& argv);

struct SpawnOptions {
  const std::vector<std::string>* env = nullptr;  // the child's whole environment
                                                  // ("KEY=value"); nullptr: ours
  std::string log_file;                           // stdout and stderr both into this file (0644), unless pipes
                                                  // are asked for; "" and no pipes: they are ours
  bool append = false;                            // log_file: continue it rather than start it empty
  bool die_with_parent = false;                   // Linux: SIGTERM to the child when the forking thread ends
                                                  // (PR_SET_PDEATHSIG), so a SIGKILLed parent leaves no job behind
  const SignalScope* signals = nullptr;           // the handlers the child drops before exec
};

// Read ends of a child's stdout and stderr: non-blocking, close-on-exec (so
// no later child inherits them and keeps them from reaching EOF). The caller
// closes them.
struct OutputPipes {
  int out = -1, err = -1;
};

// A child we started.
struct Child {
  pid_t pid = -1;      // also its process group
  bool alive = false;  // started and not yet reaped
  int status = 0;      // its waitpid() status once reaped
  int exec_errno = 0;  // not 0: the program could not be executed, and the child exits 127
};

// fork + exec with every signal blocked across the fork (our handlers must
// not run in the child before it drops them); the child starts with nothing
// blocked. Returns once exec succeeded or failed. Throws std::system_error
// when a pipe, the log file, /dev/null or fork() fails (then no child exists).
Child spawn(const ExecPlan& plan, const SpawnOptions& options, OutputPipes* pipes = nullptr);

// Collects the child's exit if it has one (waitpid(pid, WNOHANG)): true when
// this call reaped it. A child reaped behind our back counts as exit code 255.
bool reap(Child& child);

// Waits for the child's exit (after SIGKILL, say).
void reap_blocking(Child& child);

// Sends signo to the child's process group; if there is none (any more), to
// the child itself while it is unreaped (a reaped pid may be reused).
void signal_group(const Child& child, int signo);

// Closes fd if open and marks it closed.
void close_fd(int& fd);

}  // namespace atl
