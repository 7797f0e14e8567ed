// The HTML report's summary tables (summary_table.h).
#include "report/summary_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "report/figure_text.h"
#include "report/html_text.h"
#include "util/format.h"

namespace atl {
namespace {

// "20.5k", "1.64M": a count at three significant digits.
std::string count_text(double n) {
  if (n >= 1e9) return format_number("%.3gG", n / 1e9);
  if (n >= 1e6) return format_number("%.3gM", n / 1e6);
  if (n >= 1e4) return format_number("%.3gk", n / 1e3);
  return format_number("%.0f", n);
}

// What one run trained on over all workers: tokens for a language model,
// examples otherwise ("—" when the run did not record its examples).
std::string trained_on(const RunData& r) {
  if (counts_tokens(r)) return count_text(double(r.steps) * double(r.global_batch_tokens)) + " tokens";
  if (r.global_batch_examples <= 0) return "&mdash;";
  return count_text(double(r.steps) * double(r.global_batch_examples)) + " examples";
}

// A figure cell: the text on one line, then an optional note on its own.
std::string cell(const std::string& html, const std::string& attributes = "", const std::string& note = "") {
  std::string out = "<td class=\"num\"" + attributes + ">" + html;
  if (!note.empty()) out += "<br><span class=\"detail\">" + note + "</span>";
  return out + "</td>";
}

// "2.4371 &plusmn; 0.0123", escaped for HTML.
std::string figure_html(const FigureText& t) {
  return escape_html(t.value) + (t.interval.empty() ? "" : " &plusmn; " + escape_html(t.interval));
}

// Agreement figures are undefined (NaN) for one worker or older runs.
std::string figure_or_dash(const MeanInterval& m, FigureFormat format) {
  return std::isfinite(m.mean) ? figure_html(figure_text(m, format)) : std::string("&mdash;");
}

std::string percent(const MeanInterval& m) {
  if (!std::isfinite(m.mean)) return "&mdash;";
  MeanInterval p = m;
  p.mean *= 100;
  p.half_width *= 100;
  const FigureText t = figure_text(p, {FigureFormat::Decimals, 1});
  return escape_html(t.value) + "%" + (t.interval.empty() ? "" : " &plusmn; " + escape_html(t.interval) + "%");
}

// The quality columns the settings' tasks call for.
struct QualityColumns {
  bool perplexity = false, accuracy = false;
};
QualityColumns quality_columns(const std::vector<RunGroup>& groups) {
  QualityColumns q;
  for (const auto& g : groups) {
    q.perplexity = q.perplexity || counts_tokens(*g.runs.front());
    q.accuracy = q.accuracy || g.runs.front()->task == "classification";
  }
  return q;
}

std::string main_table(const std::vector<RunGroup>& groups, const RunGroup& base, const RunGroup* ddp,
                       const TargetLoss& target, const NetworkSliders& sliders) {
  const GroupFigures fb = group_figures(base, target.value);
  const double ddp_bytes = ddp ? group_figures(*ddp, target.value).bytes_per_worker.mean : 0;
  const QualityColumns q = quality_columns(groups);
  const int quality_span = 2 + int(q.perplexity) + int(q.accuracy);
  std::ostringstream o;
  o << "<table id=\"summary\"><thead>\n<tr><th rowspan=\"2\" class=\"name\">setting</th>"
    << "<th colspan=\"" << quality_span << "\" class=\"group\">final eval loss</th>"
    << "<th colspan=\"2\" class=\"group\">communication per worker</th>"
    << "<th colspan=\"2\" class=\"group\">simulated time</th></tr>\n<tr><th>mean</th>";
  if (q.perplexity) o << "<th>perplexity</th>";
  if (q.accuracy) o << "<th>accuracy</th>";
  o << "<th>vs " << escape_html(base.name) << " (paired)</th><th>sent (MB)</th><th>reduction vs "
    << (ddp ? escape_html(ddp->name) : std::string("DDP")) << "</th><th>whole run</th><th>time to loss "
    << format_target_loss(target.value) << "</th></tr>\n</thead><tbody>\n";
  const std::vector<std::string> verdicts = versus_verdicts(groups, base);
  for (const auto& g : groups) {
    const RunData& r = *g.runs.front();
    const size_t k = size_t(&g - groups.data());
    const GroupFigures f = group_figures(g, target.value);
    std::string versus = "&mdash;", verdict;
    if (&g != &base) {
      const MeanInterval d = paired_loss_difference(g, base);
      versus = format_paired_difference(d, fb.loss.mean, "&plusmn;");
      if (d.has_interval()) verdict = "<span class=\"" + verdicts[k] + "\">" + verdicts[k] + "</span>";
    }
    std::string reduction = "&mdash;";
    if (ddp_bytes > 0)
      reduction = f.bytes_per_worker.mean <= 0 ? "no traffic"
                                               : format_number("%.3g&times;", ddp_bytes / f.bytes_per_worker.mean);
    // Censored at each run's end when a seed misses the target (target_time.h).
    std::string ttt = target_times_text(f.to_target, "&plusmn;", "&ge;");
    o << "<tr" << (&g == &base ? " class=\"baseline\"" : "") << "><td>" << escape_html(g.name) << "</td>"
      << cell(figure_html(figure_text(f.loss, {FigureFormat::Decimals, 4})));
    if (q.perplexity) {
      MeanInterval none;
      none.mean = std::numeric_limits<double>::quiet_NaN();
      o << cell(figure_or_dash(counts_tokens(r) ? f.ppl : none, {FigureFormat::Decimals, 3}));
    }
    if (q.accuracy) o << cell(percent(f.accuracy));
    o << cell(versus, "", verdict) << cell(format_megabytes(f.bytes_per_worker.mean)) << cell(reduction)
      << cell(figure_html(seconds_figure(f.sim_seconds)), sliders.cell("total", k, f.sim_seconds.mean))
      << cell(ttt, sliders.cell("ttt", k, f.to_target.seconds.mean)) << "</tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

std::string more_table(const std::vector<RunGroup>& groups, double target, const NetworkSliders& sliders) {
  std::ostringstream o;
  o << "<details id=\"summary-details\"><summary>More figures per setting: strategy, workers, seeds, steps, data "
       "trained on, all workers' bytes, compute utilisation, the workers' agreement</summary>\n"
       "<table id=\"summary-more\"><thead><tr><th class=\"name\">setting</th><th>strategy</th>"
       "<th>N</th><th>seeds</th><th>steps</th><th>trained on</th><th>sent, all workers (MB)</th>"
       "<th>compute utilisation</th><th>final correlation</th><th>update correlation</th><th>disagreement</th>"
       "</tr></thead><tbody>\n";
  for (const auto& g : groups) {
    const RunData& r = *g.runs.front();
    const size_t k = size_t(&g - groups.data());
    const GroupFigures f = group_figures(g, target);
    o << "<tr><td>" << escape_html(g.name) << "</td>" << cell(escape_html(r.strategy))
      << cell(escape_html(workers_label(r))) << cell(std::to_string(f.seeds)) << cell(std::to_string(r.steps))
      << cell(trained_on(r)) << cell(format_megabytes(f.bytes_total.mean))
      << cell(format_number("%.1f%%", 100 * f.utilisation.mean), sliders.cell("util", k, f.utilisation.mean))
      << cell(r.has_correlation && r.workers > 1 ? format_number("%.4f", f.correlation.mean) : std::string("&mdash;"))
      << cell(figure_or_dash(f.update_correlation, {FigureFormat::Decimals, 4}))
      << cell(figure_or_dash(f.disagreement, {FigureFormat::Significant, 4})) << "</tr>\n";
  }
  o << "</tbody></table>\n</details>\n";
  return o.str();
}

}  // namespace

std::string summary_tables(const std::vector<RunGroup>& groups, const RunGroup& base, const RunGroup* ddp,
                           const TargetLoss& target, const NetworkSliders& sliders) {
  std::string out = main_table(groups, base, ddp, target, sliders);
  std::vector<std::pair<std::string, const RunData*>> all;
  for (const auto& g : groups) all.emplace_back(g.name, g.runs.front());
  const std::string islands = islands_note(all);
  if (!islands.empty()) out += "<p class=\"note\">" + escape_html(islands) + "</p>\n";
  const std::string holm = holm_note(groups, base);
  if (!holm.empty()) out += "<p class=\"note\">" + escape_html(holm) + "</p>\n";
  return out + more_table(groups, target.value, sliders);
}

const char* const kSummaryStyle = R"css(
#summary th.group { text-align: center; border-bottom: 2px solid #d0d0d0; }
#summary thead tr + tr th:first-child { text-align: right; }
td.num { white-space: nowrap; }
td .detail { color: #666; font-size: 12px; }
details#summary-details { margin: 0 0 24px; } details#summary-details > summary { cursor: pointer; color: #333; }
)css";

}  // namespace atl
