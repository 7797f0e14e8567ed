#include "util/process_clock.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace atl {

double seconds_since_process_start() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return nan;
  // Field 2 (the command name) may hold spaces: count from the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return nan;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int k = 3; k <= 22 && (rest >> field); ++k) {
    if (k < 22) continue;
    timespec now{};
    clock_gettime(CLOCK_BOOTTIME, &now);  // /proc's start times count from boot
    const double ticks = double(sysconf(_SC_CLK_TCK));
    return double(now.tv_sec) + 1e-9 * double(now.tv_nsec) - std::stod(field) / ticks;
  }
  return nan;
}

}  // namespace atl
