// The HTML report as a reader sees it: summary tables whose numbers are
// never split across lines and whose intervals are never noise, and every
// chart of the chart table on the page.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "atoll/report.h"
#include "report/charts.h"
#include "report/html_text.h"

namespace atl {
namespace {

// One seed of a setting: evaluated at steps 0, 50, 100; modelled times that
// differ between seeds only by summation noise (the compare report's
// "61.8 s ± 0.000551 s").
RunData seed_run(const std::string& setting, const std::string& strategy, int seed, double loss, double bytes) {
  RunData r;
  r.name = setting + "_s" + std::to_string(seed);
  r.dir = "runs/" + r.name;
  r.strategy = strategy;
  r.workers = 4;
  r.steps = 100;
  r.global_batch_tokens = 2048;
  r.eval_step = {0, 50, 100};
  r.eval_loss = {4.4, loss + 0.3, loss};
  r.eval_bytes = {0, bytes / 2, bytes};
  r.eval_time = {0, 30.9 + 1e-4 * seed, 61.8 + 2e-4 * seed};
  r.final_val_loss = loss;
  r.bytes_sent_per_worker = bytes;
  r.bytes_sent_total = 4 * bytes;
  r.sim_seconds = 61.8 + 2e-4 * seed;
  r.utilisation = 0.5;
  r.config = {{"strategy.name", "\"" + strategy + "\""}, {"run.seed", std::to_string(seed)}};
  return r;
}

std::vector<RunData> three_settings() {
  std::vector<RunData> runs;
  for (int seed = 1; seed <= 3; ++seed) {
    runs.push_back(seed_run("ddp", "ddp", seed, 2.40 + 0.01 * seed, 2.3e8));
    runs.push_back(seed_run("diloco", "diloco", seed, 2.50 + 0.013 * seed, 1.1e7));
    runs.push_back(seed_run("sparta_diloco", "sparta_diloco", seed, 2.60 + 0.05 * seed, 4e6));
  }
  return runs;
}

// The element from `<tag ... id="id"` to its closing tag.
std::string element(const std::string& html, const std::string& tag, const std::string& id) {
  const auto at = html.find("<" + tag + " id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</" + tag + ">", at) - at);
}

// Every <td ...>...</td> of a table, row by row.
std::vector<std::vector<std::string>> body_cells(const std::string& table) {
  std::vector<std::vector<std::string>> rows;
  const std::string body = table.substr(table.find("<tbody>"));
  for (size_t tr = body.find("<tr"); tr != std::string::npos; tr = body.find("<tr", tr + 1)) {
    const size_t end = body.find("</tr>", tr);
    std::vector<std::string> row;
    for (size_t td = body.find("<td", tr); td < end; td = body.find("<td", td + 1))
      row.push_back(body.substr(td, body.find("</td>", td) + 5 - td));
    rows.push_back(row);
  }
  return rows;
}

TEST(HtmlSummary, EveryFigureCellKeepsItsNumbersOnOneLine) {
  const std::string html = html_report(three_settings(), {});
  EXPECT_NE(html.find("td.num { white-space: nowrap; }"), std::string::npos);
  for (const char* id : {"summary", "summary-more"}) {
    const std::string table = element(html, "table", id);
    ASSERT_FALSE(table.empty()) << id;
    const auto rows = body_cells(table);
    ASSERT_EQ(rows.size(), 3u) << id;
    for (const auto& row : rows) {
      ASSERT_GT(row.size(), 5u) << id;
      EXPECT_EQ(row[0].rfind("<td>", 0), 0u) << "the setting's name may wrap: " << row[0];
      for (size_t c = 1; c < row.size(); ++c) {
        EXPECT_EQ(row[c].rfind("<td class=\"num\"", 0), 0u) << id << " column " << c << ": " << row[c];
        // Only a note (a verdict, how many seeds) goes to a line of its own.
        const auto br = row[c].find("<br>");
        if (br != std::string::npos) {
          EXPECT_EQ(row[c].find("<span class=\"", br), br + 4) << row[c];
        }
      }
    }
  }
}

TEST(HtmlSummary, NoIntervalIsPrintedBelowTheLastDigitOfItsFigure) {
  const std::string html = html_report(three_settings(), {});
  const std::string table = element(html, "table", "summary");
  // The modelled times agree to 0.0004 s over the seeds: "61.8 s", no "± 0.0002 s".
  EXPECT_NE(table.find(">61.8 s</td>"), std::string::npos) << table;
  // Every interval: a figure (with its unit), " ± ", its interval, both
  // with as many decimals, and the interval not zero.
  const std::string number = R"(([-+]?[0-9]+(?:\.([0-9]+))?)(e[-+][0-9]+)?)";
  const std::regex pm(number + "( [a-z%]+)? &plusmn; " + number);
  int intervals = 0;
  for (const std::string& cells : {table, element(html, "table", "summary-more")})
    for (auto it = std::sregex_iterator(cells.begin(), cells.end(), pm); it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      ++intervals;
      EXPECT_EQ(m[2].length(), m[6].length()) << "interval not at its figure's last digit: " << m.str();
      EXPECT_GT(std::stod(m[5].str() + m[7].str()), 0) << "an interval of 0 is printed: " << m.str();
    }
  EXPECT_GE(intervals, 3 * 2) << "loss and perplexity of three settings, at least";
  // The paired differences too (DiLoCo - DDP is 0.03 + 0.003 k: its interval is 0.0075).
  EXPECT_NE(table.find("+0.1060 &plusmn; 0.0075"), std::string::npos) << table;
}

TEST(HtmlSummary, TheMainTableGroupsItsColumnsAndTheRestFoldsOut) {
  const std::string html = html_report(three_settings(), {});
  const std::string main = element(html, "table", "summary");
  EXPECT_NE(main.find("<th colspan=\"3\" class=\"group\">final eval loss</th>"), std::string::npos) << main;
  EXPECT_NE(main.find("<th colspan=\"2\" class=\"group\">communication per worker</th>"), std::string::npos);
  EXPECT_NE(main.find("<th colspan=\"2\" class=\"group\">simulated time</th>"), std::string::npos);
  EXPECT_EQ(main.find("update correlation"), std::string::npos) << "agreement is in the folded table";
  const std::string more = element(html, "details", "summary-details");
  EXPECT_NE(more.find("<table id=\"summary-more\">"), std::string::npos);
  for (const char* column : {"strategy", "seeds", "steps", "trained on", "compute utilisation", "update correlation"})
    EXPECT_NE(more.find(std::string("<th>") + column + "</th>"), std::string::npos) << column;
  EXPECT_NE(more.find(">205k tokens</td>"), std::string::npos) << "100 steps of 2048 tokens";
}

// A chart that reused another's id or series key would draw over it (the
// series key silently: its data replaces the other chart's), and a `keep`
// rule the page's script does not define stops every chart after it.
TEST(HtmlCharts, IdsAndSeriesAreUniqueAndEveryKeepRuleIsOneThePageDefines) {
  const std::string html = html_report(three_settings(), {});
  std::set<std::string> ids, series;
  for (const ReportChart& c : report_charts()) {
    EXPECT_TRUE(ids.insert(c.id).second) << "two charts have the id " << c.id;
    EXPECT_TRUE(series.insert(c.series).second) << "two charts have the series " << c.series;
    EXPECT_NE(html.find("'" + std::string(c.keep) + "': "), std::string::npos)
        << c.id << ": keep rule '" << c.keep << "' is not in the page's keeps";
  }
}

TEST(HtmlCharts, EveryChartOfTheChartTableIsOnThePageWithItsSeries) {
  const std::vector<RunData> runs = three_settings();
  const std::string html = html_report(runs, {});
  const auto json_of = [&](const std::string& id) {
    const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
    const auto at = html.find(open) + open.size();
    return nlohmann::json::parse(html.substr(at, html.find("</script>", at) - at));
  };
  const nlohmann::json specs = json_of("atoll-charts"), data = json_of("atoll-data");
  ASSERT_EQ(specs.size(), report_charts().size());
  ASSERT_EQ(data.size(), 3u);
  size_t last = 0;
  for (size_t i = 0; i < report_charts().size(); ++i) {
    const ReportChart& c = report_charts()[i];
    const std::string box = "<div class=\"chart\"><h2>" + escape_html(c.title) +
                            "</h2><div class=\"box\"><canvas id=\"" + c.id + "\"></canvas></div></div>";
    const auto at = html.find(box);
    ASSERT_NE(at, std::string::npos) << c.id;
    EXPECT_GT(at, last) << c.id << " is out of the table's order";
    last = at;
    EXPECT_EQ(specs[i]["id"], c.id);
    EXPECT_EQ(specs[i]["series"], c.series);
    for (const auto& setting : data) {
      ASSERT_TRUE(setting.contains(c.series)) << c.id;
      // Three seeds: the mean and its band at every point the seeds share.
      const RunData& any = runs.front();
      EXPECT_EQ(setting[c.series]["x"].size(), std::min((any.*c.x).size(), (any.*c.y).size())) << c.id;
      EXPECT_EQ(setting[c.series]["low"].size(), setting[c.series]["y"].size()) << c.id;
    }
  }
}

}  // namespace
}  // namespace atl
