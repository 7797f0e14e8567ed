// Every method's header, for the two readers of the strategy table
// (methods.def): table.cpp needs each method's validate_<method>(),
// make_strategy.cpp its class. A new method adds its header here.
#pragma once

#include "strategy/baselines.h"
#include "strategy/demo.h"
#include "strategy/desloc.h"
#include "strategy/diloco.h"
#include "strategy/noloco.h"
#include "strategy/palsgd.h"
#include "strategy/sparseloco.h"
#include "strategy/sparta.h"
#include "strategy/streaming.h"
