// Wall-clock intervals (progress, throughput, measured compute), never the
// simulated clock.
#pragma once

#include <chrono>

namespace atl {

using WallClock = std::chrono::steady_clock;

inline double seconds_since(WallClock::time_point start) {
  return std::chrono::duration<double>(WallClock::now() - start).count();
}

}  // namespace atl
