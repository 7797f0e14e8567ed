// docs/RESULTS.md as a page: every generated table renders, every check says
// its effect, its pairs and only its computed outcome's text, and no shipped
// preset's prose claims a verdict its checks do not give (issue 35).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "atoll/experiment.h"
#include "test_util.h"
#include "tiny_data.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::kAtoll;

// The cells of a Markdown table line ("| a | b |" has 2).
size_t cells(const std::string& line) { return static_cast<size_t>(std::count(line.begin(), line.end(), '|')) - 1; }

// Every table of `md`: its header, delimiter row and body rows all have the
// same number of cells. Returns how many tables there were.
int check_tables(const std::string& md) {
  std::istringstream in(md);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  int tables = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("|", 0) != 0 || (i > 0 && lines[i - 1].rfind("|", 0) == 0)) continue;
    ++tables;
    const std::string& header = lines[i];
    EXPECT_LT(i + 1, lines.size()) << header;
    if (i + 1 >= lines.size()) break;
    const std::string& rule = lines[i + 1];
    EXPECT_EQ(rule.rfind("|---", 0), 0u) << "a table's second line is its delimiter row:\n" << header << "\n" << rule;
    EXPECT_EQ(cells(rule), cells(header)) << header << "\n" << rule;
    for (size_t j = i + 2; j < lines.size() && lines[j].rfind("|", 0) == 0; ++j)
      EXPECT_EQ(cells(lines[j]), cells(header)) << header << "\n" << lines[j];
  }
  return tables;
}

TEST(Results, EveryTableRendersAndEachCheckSaysItsEffectItsPairsAndOnlyItsOutcomesText) {
  TempDir dir;
  const std::string preset = dir.path("p.toml");
  std::ofstream(preset) << "[data]\ndataset = \"text\"\ndir = \"" << tiny_text_dir()
                        << "\"\n[model]\nn_layer = 1\nn_head = 2\nn_embd = 16\nblock_size = 16\n"
                           "[train]\nsteps = 6\nbatch_size = 2\neval_every = 3\neval_batches = 1\nlog_every = 3\n"
                           "[optim]\nwarmup_steps = 2\n[strategy]\nname = \"diloco\"\nworkers = 2\n"
                           "[diloco]\ninner_steps = 3\n[run]\nprogress = false\nout_dir = \""
                        << dir.path("runs") << R"P("
[sweep]
name = "page"
id = "R0"
title = "page"
paper_claim = "DiLoCo sends fewer bytes."
runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco", "single: strategy.name=diloco strategy.workers=1"]
baseline = "ddp"
seeds = 2
target_loss = 1e-6
effect = 0.01
[[sweep.claim]]
text = "DiLoCo sends fewer bytes"
check = "bytes(diloco) < bytes(ddp)"
holds = "SAID-HOLDS-1"
fails = "SAID-FAILS-1"
inconclusive = "SAID-INCONCLUSIVE-1"
[[sweep.claim]]
text = "a closed form"
check = "copy_seconds(7e9, 2, 100e6) > 1000"
holds = "SAID-HOLDS-2"
fails = "SAID-FAILS-2"
[[sweep.claim]]
text = "DiLoCo reaches the target first"
check = "ttt(diloco) < ttt(ddp)"
holds = "SAID-HOLDS-3"
inconclusive = "SAID-INCONCLUSIVE-3"
)P";
  const SweepSpec spec = load_sweep(preset, {}, {}, false);
  const std::string before = results_markdown({spec}, "");
  EXPECT_GE(check_tables(before), 1);
  EXPECT_EQ(before.find("SAID-"), std::string::npos) << "no outcome's text before there is an outcome\n" << before;
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  run_sweep(spec, opts);
  const std::string md = results_markdown({spec}, "");
  EXPECT_GE(check_tables(md), 2) << md;
  // Paired differences say their pairs; two settings against ddp: Holm's note.
  EXPECT_NE(md.find("(n=2 pairs)"), std::string::npos) << md;
  EXPECT_NE(md.find("Holm-adjusted over the 2 settings"), std::string::npos) << md;
  // No run reaches the target: each is censored at its end.
  EXPECT_NE(md.find("(0 of 2 reached)"), std::string::npos) << md;
  EXPECT_EQ(md.find("| never"), std::string::npos) << md;
  // Each check: its effect, and the text of its computed outcome only.
  EXPECT_NE(md.find("`bytes(diloco) < bytes(ddp)` (effect 0.01): "), std::string::npos) << md;
  EXPECT_NE(md.find("\n  SAID-HOLDS-1\n"), std::string::npos) << md;
  EXPECT_NE(md.find("decided exactly"), std::string::npos) << md;  // the closed form
  EXPECT_NE(md.find("\n  SAID-HOLDS-2\n"), std::string::npos) << md;
  EXPECT_NE(md.find("\n  SAID-INCONCLUSIVE-3\n"), std::string::npos) << md;  // lower bounds on both sides
  for (const char* other : {"SAID-FAILS-1", "SAID-INCONCLUSIVE-1", "SAID-FAILS-2", "SAID-HOLDS-3"})
    EXPECT_EQ(md.find(other), std::string::npos) << other << "\n" << md;
  EXPECT_NE(md.find("**Verdict: partly reproduced** (2 of 3 checks hold, 0 fail, 0 equivalent, 1 inconclusive)"),
            std::string::npos)
      << md;
  // The summary row: the verdict, the outcomes, the first check's paired
  // difference (bytes: the same in every seed), how many checks resolve the
  // effect, and "—" for a preset that states no changes.
  EXPECT_NE(md.find("| R0 | page | partly reproduced | 2 hold, 1 inconclusive | holds: -"), std::string::npos) << md;
  EXPECT_NE(md.find(" exactly (n=2) | "), std::string::npos) << md;
  EXPECT_NE(md.find(" of 3 (e = 0.01) | — |"), std::string::npos) << md;
}

// The attributes `name` of each element of class `cls` in an SVG, in order.
std::vector<std::map<std::string, std::string>> svg_elements(const std::string& svg, const std::string& cls) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex element("<[a-z]+ class=\"" + cls + "\"([^>]*)/>"), attribute("([a-z0-9-]+)=\"([^\"]*)\"");
  for (auto e = std::sregex_iterator(svg.begin(), svg.end(), element); e != std::sregex_iterator(); ++e) {
    std::map<std::string, std::string> attrs;
    const std::string body = (*e)[1];
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attribute); a != std::sregex_iterator(); ++a)
      attrs[(*a)[1]] = (*a)[2];
    out.push_back(attrs);
  }
  return out;
}

// The mean final eval loss of a setting's seeds, from their summary.json.
double mean_final_loss(const std::string& sweep_dir, const std::string& setting, int seeds) {
  double sum = 0;
  for (int k = 1; k <= seeds; ++k) {
    std::ifstream in(sweep_dir + "/" + setting + "_s" + std::to_string(k) + "/summary.json");
    sum += nlohmann::json::parse(in).at("final_val_loss").get<double>();
  }
  return sum / seeds;
}

TEST(Results, APresetsAgainstKeyGetsTheLossOfEachValueInATableAndAChartAtEachSettingsMean) {
  TempDir dir;
  const std::string preset = dir.path("p.toml");
  const std::string head = "[data]\ndataset = \"text\"\ndir = \"" + tiny_text_dir() +
                           "\"\n[model]\nn_layer = 1\nn_head = 2\nn_embd = 16\nblock_size = 16\n"
                           "[train]\nsteps = 6\nbatch_size = 2\neval_every = 3\neval_batches = 1\nlog_every = 3\n"
                           "[optim]\nwarmup_steps = 2\n[strategy]\nname = \"diloco\"\nworkers = 2\n"
                           "[diloco]\ninner_steps = 3\n[run]\nprogress = false\nout_dir = \"" +
                           dir.path("runs") + "\"\n";
  const std::string sweep = R"P(
[sweep]
name = "against"
title = "against"
paper_claim = "none"
runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco", "lone: strategy.name=diloco diloco.inner_steps=6"]
grid = ["diloco.inner_steps=1,3@diloco"]
baseline = "ddp"
seeds = 2
)P";
  // A key the grid does not sweep is refused, naming the grid's keys.
  std::ofstream(preset) << head << sweep << "against = \"optim.lr\"\n";
  try {
    load_sweep(preset, {}, {}, false);
    ADD_FAILURE() << "against = optim.lr was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not a key of the grid (the grid's keys: diloco.inner_steps)"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(preset) << head << sweep << "against = \"diloco.inner_steps\"\n";
  const SweepSpec spec = load_sweep(preset, {}, {}, false);
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  run_sweep(spec, opts);
  const std::string page = dir.path("docs/RESULTS.md");
  write_results_markdown({spec}, "", page);
  std::ifstream in(page);
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GE(check_tables(md), 2) << md;
  // The table: a row per value in order, a column for the grid's runs entry
  // and one for the setting that sets the key itself; DDP below it.
  const size_t table = md.find("| `diloco.inner_steps` | diloco | on their own line |");
  ASSERT_NE(table, std::string::npos) << md;
  const size_t row1 = md.find("\n| 1 | ", table), row3 = md.find("\n| 3 | ", table), row6 = md.find("\n| 6 | ", table);
  ASSERT_NE(row1, std::string::npos) << md;
  EXPECT_LT(row1, row3);
  EXPECT_LT(row3, row6);
  EXPECT_NE(md.find(" — | lone ", row6), std::string::npos) << md;
  EXPECT_NE(md.find("Without `diloco.inner_steps` (the chart's horizontal bands): ddp "), std::string::npos) << md;
  EXPECT_NE(md.find("![Final eval loss against diloco.inner_steps](img/against_loss_against_inner_steps.svg)"),
            std::string::npos)
      << md;
  // Its H = 1 cell is the main table's loss of diloco_inner_steps1.
  const size_t main_row = md.find("| diloco_inner_steps1 | 2 | diloco |");
  ASSERT_NE(main_row, std::string::npos) << md;
  std::vector<std::string> main_cells;
  std::stringstream main_line(md.substr(main_row, md.find('\n', main_row) - main_row));
  for (std::string c; std::getline(main_line, c, '|');) main_cells.push_back(c);
  ASSERT_GT(main_cells.size(), 6u);
  EXPECT_EQ(md.compare(row1 + 7, main_cells[6].size() - 1, main_cells[6].substr(1)), 0)
      << "main table's loss:" << main_cells[6] << "\n"
      << md.substr(row1, 80);

  // The chart: a point per setting at its mean, placed by H and by loss.
  const std::string runs = dir.path("runs/against");
  std::ifstream chart_in(dir.path("docs/img/against_loss_against_inner_steps.svg"));
  ASSERT_TRUE(chart_in.good()) << "the chart is written into img/ beside the page";
  const std::string svg((std::istreambuf_iterator<char>(chart_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  const auto points = svg_elements(svg, "point"), lone = svg_elements(svg, "lone"),
             references = svg_elements(svg, "reference"), intervals = svg_elements(svg, "interval");
  ASSERT_EQ(points.size(), 2u) << svg;
  ASSERT_EQ(lone.size(), 1u) << svg;
  ASSERT_EQ(references.size(), 1u) << svg;
  EXPECT_EQ(intervals.size(), 3u) << "each setting with two seeds has its interval";
  EXPECT_EQ(points[0].at("data-setting"), "diloco_inner_steps1");
  EXPECT_EQ(points[1].at("data-setting"), "diloco_inner_steps3");
  EXPECT_EQ(lone[0].at("data-setting"), "lone");
  EXPECT_EQ(references[0].at("data-setting"), "ddp");
  EXPECT_NE(svg.find("<polyline class=\"line\" data-family=\"diloco\""), std::string::npos);
  std::vector<std::pair<double, double>> loss_and_y;
  for (const auto& [name, y] : {std::pair{std::string("diloco_inner_steps1"), std::stod(points[0].at("cy"))},
                                std::pair{std::string("diloco_inner_steps3"), std::stod(points[1].at("cy"))},
                                std::pair{std::string("ddp"), std::stod(references[0].at("y1"))}}) {
    const double mean = mean_final_loss(runs, name, 2);
    const std::string shown = name == "ddp"                   ? references[0].at("data-mean")
                              : name == "diloco_inner_steps1" ? points[0].at("data-mean")
                                                              : points[1].at("data-mean");
    EXPECT_NEAR(std::stod(shown), mean, 1e-5 * std::fabs(mean)) << name;
    loss_and_y.push_back({mean, y});
  }
  std::sort(loss_and_y.begin(), loss_and_y.end());
  for (size_t i = 1; i < loss_and_y.size(); ++i)
    if (loss_and_y[i].first > loss_and_y[i - 1].first)
      EXPECT_LT(loss_and_y[i].second, loss_and_y[i - 1].second) << "a larger loss is drawn higher (smaller y)";
  EXPECT_LT(std::stod(points[0].at("cx")), std::stod(points[1].at("cx")));
  const std::string lone_path = lone[0].at("d");
  EXPECT_LT(std::stod(points[1].at("cx")), std::stod(lone_path.substr(1, lone_path.find(' ') - 1)))
      << "H = 6 right of H = 3";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Words that state an outcome. Negative phrases are removed before the
// positive words are looked for ("not reproduced" is not "reproduced").
const std::vector<std::string> kNegative = {"not reproduc", "does not reproduce", "fails", "failed", "contradict"};
const std::vector<std::string> kPositive = {"reproduc", "holds", "confirm"};
const std::vector<std::string> kUndecided = {"inconclusive"};

std::string found(const std::string& text, const std::vector<std::string>& words, bool strip_negative) {
  std::string t = lower(text);
  if (strip_negative)
    for (const auto& n : kNegative)
      for (size_t at; (at = t.find(n)) != std::string::npos;) t.erase(at, n.size());
  for (const auto& w : words)
    if (t.find(w) != std::string::npos) return w;
  return "";
}

TEST(Presets, NoPagesProseClaimsAVerdictItsChecksDoNotGive) {
  int presets = 0;
  for (const auto& entry : fs::directory_iterator(std::string(ATOLL_SOURCE_DIR) + "/configs")) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".toml" || file.rfind("r", 0) != 0 ||
        !std::isdigit(static_cast<unsigned char>(file[1])))
      continue;
    ++presets;
    const SweepSpec spec = load_sweep(entry.path().string(), {}, {}, false);
    // The discussion is printed whatever the checks give: no verdict in it.
    // So is what changed since round one (the summary table's last column),
    // which every reproduction preset states.
    EXPECT_FALSE(spec.changes.empty()) << file << ": [sweep] changes is missing";
    for (const auto* words : {&kNegative, &kPositive, &kUndecided}) {
      EXPECT_EQ(found(spec.discussion, *words, words == &kPositive), "") << file << ": discussion";
      EXPECT_EQ(found(spec.changes, *words, words == &kPositive), "") << file << ": changes";
    }
    for (const auto& c : spec.claims) {
      EXPECT_FALSE(c.holds.empty()) << file << ": '" << c.text << "' says nothing when it holds";
      EXPECT_FALSE(c.fails.empty()) << file << ": '" << c.text << "' says nothing when it fails";
      EXPECT_EQ(found(c.holds, kNegative, false), "") << file << ": holds text of '" << c.text << "'";
      EXPECT_EQ(found(c.holds, kUndecided, false), "") << file << ": holds text of '" << c.text << "'";
      EXPECT_EQ(found(c.fails, kPositive, true), "") << file << ": fails text of '" << c.text << "'";
      for (const std::string* open : {&c.equivalent, &c.inconclusive}) {
        EXPECT_EQ(found(*open, kNegative, false), "") << file << ": '" << c.text << "': " << *open;
        EXPECT_EQ(found(*open, kPositive, true), "") << file << ": '" << c.text << "': " << *open;
      }
    }
    // Without run folders a preset with runs is "not run" and says no
    // outcome's text; one with none (a closed form) is judged all the same,
    // and says only the computed outcome's text.
    TempDir empty;
    const std::string page = results_markdown({spec}, empty.str());
    if (!spec.runs.empty()) EXPECT_NE(page.find("**Verdict: not run**"), std::string::npos) << file;
    for (const auto& c : spec.claims) {
      const ClaimVerdict::Outcome computed =
          spec.runs.empty() ? judge_claim(c.check, {}, 0).outcome : ClaimVerdict::Inconclusive;
      const std::pair<ClaimVerdict::Outcome, const std::string*> texts[] = {
          {ClaimVerdict::Holds, &c.holds},
          {ClaimVerdict::Fails, &c.fails},
          {ClaimVerdict::Equivalent, &c.equivalent},
          {ClaimVerdict::Inconclusive, &c.inconclusive}};
      for (const auto& [outcome, said] : texts) {
        if (said->empty()) continue;
        const bool printed = page.find(*said) != std::string::npos;
        EXPECT_EQ(printed, spec.runs.empty() && outcome == computed) << file << ": " << *said;
      }
    }
  }
  EXPECT_EQ(presets, 16);
}

// The page's title names the targets it covers: a range only when they run
// without a gap, each one otherwise (R10, R12-R14 is not "R10–R14").
TEST(Results, TitleNamesARangeOnlyForTargetsWithoutAGap) {
  auto title = [](const std::vector<std::string>& ids) {
    std::vector<SweepSpec> specs;
    for (const auto& id : ids) {
      SweepSpec s;
      s.id = id;
      s.title = "t";
      specs.push_back(s);
    }
    TempDir empty;
    const std::string page = results_markdown(specs, empty.str());
    return page.substr(0, page.find('\n'));
  };
  EXPECT_EQ(title({"R1", "R2", "R3", "R4", "R5"}), "# Reproduction results (R1–R5)");
  EXPECT_EQ(title({"R10", "R12", "R13", "R14"}), "# Reproduction results (R10, R12, R13, R14)");
  EXPECT_EQ(title({"R1", "R2", "R4", "R5", "R6"}), "# Reproduction results (R1, R2, R4, R5, R6)");
  EXPECT_EQ(title({"R12", "R13"}), "# Reproduction results (R12, R13)");
  EXPECT_EQ(title({"R1", "X", "R3"}), "# Reproduction results (R1, X, R3)");
  EXPECT_EQ(title({}), "# Reproduction results");
}

}  // namespace
}  // namespace atl
