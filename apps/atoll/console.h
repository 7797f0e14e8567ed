// What a training command prints: the model line at start (parameters and
// training FLOPs, with where they come from), the progress line (live on a
// terminal, every evaluation and every 10% otherwise) and the summary at
// the end.
#pragma once

#include "atoll/config.h"
#include "atoll/train.h"

// Hooks that print training's progress for `cfg` (run.progress, a terminal or not).
atl::TrainHooks progress_hooks(const atl::Config& cfg);
// The end of a run: its final losses, speed, traffic and how far to trust them.
void print_done(const atl::RunSummary& s);
