// sparta_peak_p() / sparta_p_at() for the fuzz build: the "p schedule"
// section of src/strategy/sparta.cpp, extracted verbatim by
// fuzz/CMakeLists.txt, without the rest of that file (the SPARTA strategy
// and its LibTorch and communicator dependencies), which validate() does not
// need.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "atoll/config.h"

namespace atl {
#include "sparta_schedule.inc"
}  // namespace atl
