// Catching SIGINT and SIGTERM: the one signal handler of the library, shared
// by training's stop signal (train/stop_signal.h) and the process toolkit's
// signal scope (launch/process.h), which differ only in the options below.
//
// A caught SIGINT/SIGTERM is counted in a process-wide latch (a signal reaches
// the process, not a run or a job): the one piece of global state here, set
// only by the handler. Optionally the handler also writes the signal number to
// a wake-up fd, so a poll() loop notices at once (write() is async-signal-safe).
#pragma once

#include <signal.h>

#include <array>
#include <cstddef>

namespace atl {

struct SignalLatchOptions {
  int wake_fd = -1;                  // non-blocking; gets one byte, the signal number, per signal
  bool catch_child = false;          // also catch SIGCHLD, only to write wake_fd (never counted);
                                     // caught even when ignored, since SIG_IGN would reap children
  bool keep_ignored = false;         // a SIGINT/SIGTERM ignored when the latch is made (nohup,
                                     // `cmd &` in a script) stays ignored
  const char* first_note = nullptr;  // written to stderr by the handler on the first SIGINT/SIGTERM
  bool second_is_fatal = false;      // a second SIGINT/SIGTERM takes its default action at once
};

// Installs the handlers while alive (resetting the count); restores the
// previous handlers after. Latches nest (the inner one wins until it ends).
// Make and destroy on one thread; the count may be read from any thread.
class SignalLatch {
 public:
  explicit SignalLatch(const SignalLatchOptions& options);
  ~SignalLatch();
  SignalLatch(const SignalLatch&) = delete;
  SignalLatch& operator=(const SignalLatch&) = delete;

  // Async-signal-safe, for a child between fork and exec with every signal
  // blocked: it must not run our handler (which writes into our wake-up fd).
  // Gives it what a new program should start with: the caller's SIG_IGN
  // stays, everything else is SIG_DFL.
  void reset_in_child() const;

  // What the handler reads; public only so the handler (a free function) can.
  struct Shared {
    int wake_fd;
    const char* first_note;
    size_t first_note_size;
    bool second_is_fatal;
  };

 private:
  struct Saved {
    int signo;
    bool installed = false;
    struct sigaction old {};
    struct sigaction child {};
  };
  Shared shared_;
  const Shared* outer_;  // the latch this one nests in, restored on exit
  std::array<Saved, 3> saved_{{{SIGINT}, {SIGTERM}, {SIGCHLD}}};
};

// SIGINT/SIGTERM caught since the newest latch was made (it stays readable
// after that latch ends, until the next one is made).
int caught_signals();

}  // namespace atl
