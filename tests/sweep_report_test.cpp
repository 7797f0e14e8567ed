// A sweep's report.html shows the preset's claims as RESULTS.md words them
// (issue 35 §4): each check's text, outcome, paired difference with its
// interval and the preset's text for that outcome, then the verdict, all
// escaped; a report of plain run folders (no preset) has no Claims section.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "atoll/experiment.h"
#include "report/html_text.h"
#include "test_util.h"
#include "tiny_data.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::kAtoll;

// One check as RESULTS.md prints it: "- word: text — `check` (effect e): figures"
// and, on the next line, the outcome's text.
struct MarkdownCheck {
  std::string outcome, text, check, effect, figures, prose;
};

std::vector<MarkdownCheck> markdown_checks(const std::string& md) {
  std::istringstream in(md);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<MarkdownCheck> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    const size_t dash = l.find(" — `"), effect = l.find("` (effect "), colon = l.find(": ");
    if (l.rfind("- ", 0) != 0 || dash == std::string::npos || effect == std::string::npos) continue;
    MarkdownCheck c;
    c.outcome = l.substr(2, colon - 2);
    if (c.outcome.rfind("**", 0) == 0) c.outcome = c.outcome.substr(2, c.outcome.size() - 4);
    c.text = l.substr(colon + 2, dash - colon - 2);
    c.check = l.substr(dash + std::string(" — `").size(), effect - dash - std::string(" — `").size());
    const size_t close = l.find("): ", effect);
    c.effect = l.substr(effect + std::string("` (effect ").size(), close - effect - std::string("` (effect ").size());
    c.figures = l.substr(close + 3);
    if (i + 1 < lines.size() && lines[i + 1].rfind("  ", 0) == 0) c.prose = lines[i + 1].substr(2);
    out.push_back(c);
  }
  return out;
}

// A finished sweep of two settings x two seeds with three checks (an exact
// one on bytes, a closed form, one on the loss whose interval is printed),
// its report.html written by `atoll sweep`, and RESULTS.md for its preset.
struct JudgedSweep {
  TempDir dir;
  std::string html, md, sweep_log;
  std::vector<std::string> run_dirs;
  JudgedSweep() {
    const std::string preset = dir.path("p.toml");
    std::ofstream(preset) << "[data]\ndataset = \"text\"\ndir = \"" << tiny_text_dir()
                          << "\"\n[model]\nn_layer = 1\nn_head = 2\nn_embd = 16\nblock_size = 16\n"
                             "[train]\nsteps = 6\nbatch_size = 2\neval_every = 3\neval_batches = 1\nlog_every = 3\n"
                             "[optim]\nwarmup_steps = 2\n[strategy]\nname = \"diloco\"\nworkers = 2\n"
                             "[diloco]\ninner_steps = 3\n[run]\nprogress = false\nout_dir = \""
                          << dir.path("runs") << R"P("
[sweep]
name = "claims"
id = "R0"
title = "claims"
runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco"]
baseline = "ddp"
seeds = 2
effect = 0.01
[[sweep.claim]]
text = "DiLoCo sends <fewer> bytes & less"
check = "bytes(diloco) < bytes(ddp)"
holds = "HOLDS-1 <b>sent less</b>"
fails = "FAILS-1"
[[sweep.claim]]
text = "a closed form"
check = "copy_seconds(7e9, 2, 100e6) > 1000"
holds = "HOLDS-2"
[[sweep.claim]]
text = "DiLoCo's loss is lower"
check = "loss(diloco) < loss(ddp)"
holds = "SAID-3"
fails = "SAID-3"
equivalent = "SAID-3"
inconclusive = "SAID-3"
)P";
    const std::string log = dir.path("sweep.log");
    const int status =
        std::system((kAtoll + " sweep " + preset + " --no-network-sliders > '" + log + "' 2>&1").c_str());
    sweep_log = testing::read_text(log);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return;
    html = testing::read_text(fs::path(dir.path("runs")) / "claims" / "report.html");
    md = results_markdown({load_sweep(preset, {}, {}, false)}, "");
    for (const char* run : {"ddp_s1", "ddp_s2", "diloco_s1", "diloco_s2"})
      run_dirs.push_back((fs::path(dir.path("runs")) / "claims" / run).string());
  }
};

const JudgedSweep& judged() {
  static const JudgedSweep s;
  return s;
}

// The page's Claims section ("" when it has none).
std::string claims_section(const std::string& html) {
  const size_t begin = html.find("<section id=\"claims\">");
  if (begin == std::string::npos) return "";
  return html.substr(begin, html.find("</section>", begin) - begin);
}

TEST(SweepReport, ClaimsSectionShowsEachChecksOutcomeAndTheIntervalTextResultsMdPrints) {
  const JudgedSweep& s = judged();
  ASSERT_FALSE(s.html.empty()) << s.sweep_log;
  const std::string section = claims_section(s.html);
  ASSERT_FALSE(section.empty()) << s.html;
  // Under the summary table, above the charts.
  EXPECT_GT(s.html.find("<section id=\"claims\">"), s.html.find("id=\"summary\""));
  EXPECT_LT(s.html.find("<section id=\"claims\">"), s.html.find("<canvas"));

  const std::vector<MarkdownCheck> checks = markdown_checks(s.md);
  ASSERT_EQ(checks.size(), 3u) << s.md;
  // The third check's figures carry a paired interval over the two seeds.
  EXPECT_NE(checks[2].figures.find(" ± "), std::string::npos) << checks[2].figures;
  EXPECT_NE(checks[2].figures.find("(95% interval, n=2 pairs)"), std::string::npos) << checks[2].figures;
  EXPECT_NE(checks[1].figures.find("decided exactly"), std::string::npos) << checks[1].figures;
  std::vector<std::string> items;
  for (size_t at = section.find("<li class=\"claim\""); at != std::string::npos;) {
    const size_t next = section.find("<li class=\"claim\"", at + 1);
    items.push_back(section.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  ASSERT_EQ(items.size(), checks.size()) << section;
  for (size_t i = 0; i < checks.size(); ++i) {
    const MarkdownCheck& c = checks[i];
    const std::string& li = items[i];
    EXPECT_NE(li.find("data-outcome=\"" + c.outcome + "\""), std::string::npos) << c.outcome << "\n" << li;
    for (const std::string* part : {&c.text, &c.check, &c.figures, &c.prose})
      EXPECT_NE(li.find(escape_html(*part)), std::string::npos) << *part << "\n" << li;
    EXPECT_NE(li.find("(effect " + c.effect + ")"), std::string::npos) << c.effect << "\n" << li;
  }
  EXPECT_EQ(checks[0].outcome, "holds");
  EXPECT_EQ(checks[1].outcome, "holds");
  // The preset's verdict line, as RESULTS.md gives it.
  const size_t verdict = s.md.find("**Verdict: ");
  ASSERT_NE(verdict, std::string::npos) << s.md;
  const size_t word_end = s.md.find("**", verdict + 11);
  const std::string word = s.md.substr(verdict + 11, word_end - verdict - 11);
  const std::string tally = s.md.substr(word_end + 2, s.md.find('\n', word_end) - word_end - 2);
  EXPECT_NE(section.find("Verdict: <b>" + escape_html(word) + "</b>" + escape_html(tally)), std::string::npos)
      << word << tally << "\n"
      << section;
}

TEST(SweepReport, AReportOfTheSameRunFoldersWithoutAPresetHasNoClaimsSection) {
  const JudgedSweep& s = judged();
  ASSERT_FALSE(s.html.empty()) << s.sweep_log;
  EXPECT_FALSE(claims_section(s.html).empty()) << "the sweep's own report has one";
  std::string args;
  for (const auto& d : s.run_dirs) args += " " + d;
  const std::string out = s.dir.path("plain.html"), log = s.dir.path("report.log");
  ASSERT_EQ(
      std::system((kAtoll + " report" + args + " -o " + out + " --no-network-sliders > " + log + " 2>&1").c_str()), 0)
      << testing::read_text(log);
  const std::string plain = testing::read_text(out);
  ASSERT_NE(plain.find("id=\"summary\""), std::string::npos) << plain;
  EXPECT_EQ(plain.find("id=\"claims\""), std::string::npos);
  EXPECT_EQ(plain.find("<h2>Claims</h2>"), std::string::npos);
  EXPECT_EQ(plain.find("Verdict:"), std::string::npos);
}

TEST(SweepReport, ClaimTextsChecksAndProseAreEscapedForHtml) {
  const JudgedSweep& s = judged();
  ASSERT_FALSE(s.html.empty()) << s.sweep_log;
  const std::string section = claims_section(s.html);
  EXPECT_NE(section.find("DiLoCo sends &lt;fewer&gt; bytes &amp; less"), std::string::npos) << section;
  EXPECT_NE(section.find("<code>bytes(diloco) &lt; bytes(ddp)</code>"), std::string::npos) << section;
  EXPECT_NE(section.find("HOLDS-1 &lt;b&gt;sent less&lt;/b&gt;"), std::string::npos) << section;
  // Nowhere on the page unescaped.
  for (const char* raw : {"<fewer>", "bytes & less", "<b>sent less</b>", "bytes(diloco) < bytes(ddp)"})
    EXPECT_EQ(s.html.find(raw), std::string::npos) << raw;
}

TEST(SweepReport, ChecksNamingARunTheSweepDoesNotHaveAreNotJudgedAndTheReportSaysWhy) {
  // As after a --grid, which renames the runs a preset's checks name.
  TempDir dir;
  const std::string preset = dir.write("p.toml", R"P([sweep]
name = "renamed"
runs = []
[[sweep.claim]]
text = "DDP learns"
check = "loss(ddp) < 10"
)P");
  const SweepSpec spec = load_sweep(preset, {}, {}, false);
  ReportOptions ro;
  ASSERT_NO_THROW(ro = sweep_report_options(spec, dir.path("renamed")));
  EXPECT_TRUE(ro.claims.empty());
  EXPECT_EQ(ro.verdict, "not judged");
  EXPECT_NE(ro.verdict_tally.find("run 'ddp' has no results"), std::string::npos) << ro.verdict_tally;
}

}  // namespace
}  // namespace atl
