// The HTML report's Claims section (claims_section.h).
#include "report/claims_section.h"

#include <sstream>

#include "report/html_text.h"

namespace atl {

const char* const kClaimsStyle = R"css(
#claims { margin: 10px 0 24px; } #claims h2 { font-size: 17px; margin: 0 0 6px; }
#claims ul { padding-left: 20px; margin: 6px 0; } #claims li { margin: 6px 0; }
#claims .outcome { font-weight: 600; } #claims .outcome.holds { color: #1a7f37; }
#claims .outcome.fails { color: #cf222e; } #claims .outcome.equivalent { color: #1f4fbf; }
#claims .outcome.inconclusive { color: #9a6700; } #claims .figures { color: #444; }
#claims .prose { margin: 2px 0 0; color: #333; }
)css";

std::string claims_section_html(const ReportOptions& options) {
  if (options.claims.empty() && options.verdict.empty()) return "";
  std::ostringstream o;
  o << "<section id=\"claims\">\n<h2>Claims</h2>\n";
  if (!options.claims.empty()) {
    // The rule the outcomes follow, as RESULTS.md states it over its checks.
    o << "<p class=\"sub\">Computed from the run folders: a check holds or fails only when the 95% interval of its "
         "paired difference over seeds excludes 0, or exactly when the difference is the same in every seed or "
         "names no run; <i>equivalent</i>: inconclusive, but the interval lies inside &plusmn; its effect.</p>\n<ul>\n";
    for (const ReportClaim& c : options.claims) {
      const std::string outcome = escape_html(c.outcome);
      o << "<li class=\"claim\" data-outcome=\"" << outcome << "\"><span class=\"outcome " << outcome << "\">"
        << outcome << "</span>: <span class=\"text\">" << escape_html(c.text) << "</span> &mdash; <code>"
        << escape_html(c.check) << "</code> (effect " << escape_html(c.effect) << "): <span class=\"figures\">"
        << escape_html(c.figures) << "</span>";
      if (!c.prose.empty()) o << "\n<p class=\"prose\">" << escape_html(c.prose) << "</p>";
      o << "</li>\n";
    }
    o << "</ul>\n";
  }
  if (!options.verdict.empty()) {
    o << "<p id=\"verdict\">Verdict: <b>" << escape_html(options.verdict) << "</b>";
    if (!options.verdict_tally.empty()) o << " (" << escape_html(options.verdict_tally) << ")";
    o << "</p>\n";
  }
  o << "</section>\n";
  return o.str();
}

}  // namespace atl
