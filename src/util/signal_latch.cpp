#include "util/signal_latch.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace atl {
namespace {

std::atomic<int> g_caught{0};
std::atomic<const SignalLatch::Shared*> g_shared{nullptr};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler updates g_caught");
static_assert(std::atomic<const SignalLatch::Shared*>::is_always_lock_free, "the signal handler reads g_shared");

extern "C" void on_signal(int signo) {
  const int saved_errno = errno;
  const SignalLatch::Shared* s = g_shared.load(std::memory_order_acquire);
  if (s && signo != SIGCHLD) {
    const int before = g_caught.fetch_add(1);
    if (before > 0 && s->second_is_fatal) {
      std::signal(signo, SIG_DFL);  // asked twice: the default action, now
      std::raise(signo);
      errno = saved_errno;
      return;
    }
    if (before == 0 && s->first_note) (void)!write(2, s->first_note, s->first_note_size);
  }
  if (s && s->wake_fd >= 0) {
    // A full pipe (EAGAIN) already guarantees a wake-up; nothing else to do.
    const unsigned char byte = static_cast<unsigned char>(signo);
    (void)!write(s->wake_fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

SignalLatch::SignalLatch(const SignalLatchOptions& options)
    : shared_{options.wake_fd, options.first_note, options.first_note ? std::strlen(options.first_note) : 0,
              options.second_is_fatal},
      outer_(g_shared.load()) {
  g_caught.store(0);
  g_shared.store(&shared_, std::memory_order_release);  // before any handler can run
  for (Saved& s : saved_) {
    if (s.signo == SIGCHLD && !options.catch_child) continue;
    sigaction(s.signo, nullptr, &s.old);
    const bool ignored = !(s.old.sa_flags & SA_SIGINFO) && s.old.sa_handler == SIG_IGN;
    s.installed = s.signo == SIGCHLD || !(ignored && options.keep_ignored);
    if (!s.installed) continue;
    // exec resets handled signals to SIG_DFL anyway, but our handler must not
    // run in a child before exec, and an ignored signal stays ignored there.
    s.child = {};
    s.child.sa_handler = ignored ? SIG_IGN : SIG_DFL;
    sigemptyset(&s.child.sa_mask);
    struct sigaction act {};
    act.sa_handler = on_signal;
    sigemptyset(&act.sa_mask);
    // SA_RESTART: the caller's other threads should not see EINTR from us.
    act.sa_flags = SA_RESTART | (s.signo == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigaction(s.signo, &act, nullptr);
  }
}

SignalLatch::~SignalLatch() {
  for (const Saved& s : saved_) {
    if (s.installed) sigaction(s.signo, &s.old, nullptr);
  }
  g_shared.store(outer_, std::memory_order_release);
}

void SignalLatch::reset_in_child() const {
  for (const Saved& s : saved_) {
    if (s.installed) sigaction(s.signo, &s.child, nullptr);
  }
}

int caught_signals() { return g_caught.load(); }

}  // namespace atl
