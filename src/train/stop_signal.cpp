#include "train/stop_signal.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace atl {
namespace {

std::atomic<int> g_signals{0};
struct sigaction g_old_int, g_old_term;

extern "C" void on_stop_signal(int sig) {
  if (g_signals.fetch_add(1) == 0) {
    const char msg[] = "\natoll: stopping at the next log step after writing a checkpoint (signal again to quit now)\n";
    (void)!::write(2, msg, sizeof msg - 1);
    return;
  }
  std::signal(sig, SIG_DFL);  // the second signal: default action, now
  std::raise(sig);
}

}  // namespace

StopSignalScope::StopSignalScope() {
  g_signals = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

StopSignalScope::~StopSignalScope() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool stop_requested() { return g_signals.load() > 0; }

}  // namespace atl
