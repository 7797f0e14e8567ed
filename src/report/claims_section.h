// The HTML report's "Claims" section: a preset's checks as the sweep judged
// and worded them (ReportOptions::claims, the same strings RESULTS.md
// prints), each with its outcome, its paired difference and interval and
// the preset's text for that outcome, then the preset's verdict.
#pragma once

#include <string>

#include "atoll/report.h"

namespace atl {

// "" when the options carry no checks and no verdict (a report of plain run
// folders). Every string is escaped here.
std::string claims_section_html(const ReportOptions& options);

// The section's style (part of the page's <style>).
extern const char* const kClaimsStyle;

}  // namespace atl
