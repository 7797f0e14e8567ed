// SIGINT/SIGTERM during training: the first signal asks the run to stop at
// its next observation step, after writing a checkpoint (so `--resume`
// continues it); a second signal ends the process at once, as usual.
//
// A signal reaches the process, not a run, so the flag is process-wide: the
// one piece of global state in the library, set only by the handler.
#pragma once

namespace atl {

// Installs the handlers while alive; restores the previous ones after.
class StopSignalScope {
 public:
  StopSignalScope();
  ~StopSignalScope();
  StopSignalScope(const StopSignalScope&) = delete;
  StopSignalScope& operator=(const StopSignalScope&) = delete;
};

// Whether a stop was asked for since the handlers were installed.
bool stop_requested();

}  // namespace atl
