// One worker's simulated time (DESIGN.md "Simulated time").

#include <cmath>
#include <stdexcept>
#include <string>

#include "atoll/net.h"

namespace atl {

void VirtualClock::advance_compute(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    throw std::invalid_argument(
        "VirtualClock::advance_compute: compute time must be a finite "
        "number >= 0 s, got " +
        std::to_string(seconds));
  }
  now_ += seconds;
  compute_ += seconds;
}

void VirtualClock::wait_until(double t) {
  if (!std::isfinite(t)) {
    throw std::invalid_argument("VirtualClock::wait_until: time must be finite");
  }
  if (t > now_) {
    blocked_ += t - now_;
    now_ = t;
  }
}

}  // namespace atl
