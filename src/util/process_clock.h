// Seconds since this process started, by the kernel's record of its start
// (so the dynamic loader and static initialisers are included).
#pragma once

namespace atl {

// NaN where /proc is unavailable. Resolution: one clock tick (10 ms).
double seconds_since_process_start();

}  // namespace atl
