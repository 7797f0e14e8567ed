// SIGINT/SIGTERM during training: the first signal asks the run to stop at
// its next observation step, after writing a checkpoint (so `--resume`
// continues it); a second signal ends the process at once, as usual.
//
// The catching itself is util/signal_latch.h (shared with the process
// toolkit); this file is the policy. A signal reaches the process, not a
// run, so the flag is process-wide.
#pragma once

#include "util/signal_latch.h"

namespace atl {

// The stop policy above as latch options: the sweep stops its runs the same
// way and uses it too.
SignalLatchOptions stop_signal_options();

// Installs the handlers while alive; restores the previous ones after.
class StopSignalScope {
 public:
  StopSignalScope() : latch_(stop_signal_options()) {}

 private:
  SignalLatch latch_;
};

// Whether a stop was asked for since the handlers were installed.
bool stop_requested();

}  // namespace atl
