#include "train/stop_signal.h"

namespace atl {

SignalLatchOptions stop_signal_options() {
  SignalLatchOptions o;
  o.first_note = "\natoll: stopping at the next log step after writing a checkpoint (signal again to quit now)\n";
  o.second_is_fatal = true;
  return o;
}

bool stop_requested() { return caught_signals() > 0; }

}  // namespace atl
