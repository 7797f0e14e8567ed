// The train command's terminal lines (simulated and real runs): the model
// line at start, a live progress line (plain lines when stdout is not a
// terminal), and the summary when the run ends or stops.
#pragma once

#include "atoll/config.h"
#include "atoll/train.h"

atl::TrainHooks progress_hooks(const atl::Config& cfg);
void print_done(const atl::RunSummary& s);
