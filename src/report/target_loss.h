// The report's target loss from its settings (choose_target_loss in
// atoll/report.h, on groups already made).
#pragma once

#include <vector>

#include "atoll/report.h"
#include "report/groups.h"

namespace atl {

// `base` is the reference setting, one of `groups`.
TargetLoss choose_target_loss(const RunGroup& base, const ReportOptions& options);

}  // namespace atl
