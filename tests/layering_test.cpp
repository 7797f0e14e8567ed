// The areas of src/ run one way (docs/ARCHITECTURE.md, "Layers"): a file
// includes only its own area and the areas below it. This reads every
// #include "..." of src/ and include/atoll/ and fails on one that points
// sideways or up, naming the file, the line and the two areas; and on a
// folder or public header that has no place in the order, so a new area
// must be placed before it is used.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Lowest first. An area may include areas of a lower rank, never its own
// rank's others (model and data, say, know nothing of each other).
const std::map<std::string, int>& area_ranks() {
  static const std::map<std::string, int> ranks = {
      {"util", 0},                                   // knows no other area
      {"state", 1},      {"config", 1},              // StateVisitor; the config structs and parsing
      {"model", 2},      {"data", 2},   {"net", 2},  // each knows config, state and util only
      {"comm", 3},                                   // collectives charge net's clock and links
      {"compress", 4},   {"launch", 4},              // the payload path sends through comm; the job token
      {"strategy", 5},   {"cost", 5},                // methods: comm + compress; atoll cost: net + codec sizes
      {"setup", 6},                                  // validate(), load_config(), --help: above every checked area
      {"train", 7},                                  // the driver and the run folder
      {"report", 8},                                 // run folders -> tables, charts, replays (whatif)
      {"experiment", 9}, {"bench", 9},               // sweeps and claims; benchmarks
  };
  return ranks;
}

// include/atoll/<name>.h -> the area that implements it.
const std::map<std::string, std::string>& public_header_areas() {
  static const std::map<std::string, std::string> areas = {
      {"config", "config"},
      {"state", "state"},
      {"model", "model"},
      {"data", "data"},
      {"net", "net"},
      {"cost", "cost"},
      {"comm", "comm"},
      {"dist", "comm"},
      {"strategy", "strategy"},
      {"setup", "setup"},
      {"train", "train"},
      {"run_model", "train"},
      {"retime", "train"},
      {"launch", "launch"},
      {"report", "report"},
      {"whatif", "report"},
      {"experiment", "experiment"},
      {"bench", "bench"},
  };
  return areas;
}

struct Include {
  std::string file;  // relative to the source tree
  int line;
  std::string from, to;  // areas
  std::string text;
};

// The area an #include "..." names, or "" for one that is not atoll's (a
// header of the same folder is found by the caller).
std::string area_of(const std::string& included) {
  static const std::regex public_header(R"(atoll/(\w+)\.h)"), area_header(R"((\w+)/.*)");
  std::smatch m;
  if (std::regex_match(included, m, public_header)) {
    auto it = public_header_areas().find(m[1]);
    return it == public_header_areas().end() ? "?" + included : it->second;
  }
  if (std::regex_match(included, m, area_header)) return m[1];
  return "";
}

std::vector<Include> includes_of(const fs::path& file, const std::string& rel, const std::string& area) {
  static const std::regex include_line(R"(\s*#\s*include\s+"([^"]+)\".*)");
  std::vector<Include> found;
  std::ifstream in(file);
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    std::smatch m;
    if (!std::regex_match(text, m, include_line)) continue;
    std::string to = area_of(m[1]);
    if (to.empty() || to == area) continue;
    found.push_back({rel, n, area, to, m[1]});
  }
  return found;
}

std::vector<Include> every_include() {
  const fs::path root = ATOLL_SOURCE_DIR;
  std::vector<Include> all;
  for (const auto& dir : fs::directory_iterator(root / "src")) {
    if (!dir.is_directory()) continue;
    const std::string area = dir.path().filename().string();
    for (const auto& f : fs::directory_iterator(dir.path())) {
      auto found = includes_of(f.path(), "src/" + area + "/" + f.path().filename().string(), area);
      all.insert(all.end(), found.begin(), found.end());
    }
  }
  for (const auto& f : fs::directory_iterator(root / "include" / "atoll")) {
    const std::string name = f.path().stem().string();
    auto it = public_header_areas().find(name);
    const std::string area = it == public_header_areas().end() ? "?include/atoll/" + name + ".h" : it->second;
    auto found = includes_of(f.path(), "include/atoll/" + f.path().filename().string(), area);
    all.insert(all.end(), found.begin(), found.end());
  }
  return all;
}

TEST(Layering, EveryAreaAndPublicHeaderHasARank) {
  const fs::path root = ATOLL_SOURCE_DIR;
  for (const auto& dir : fs::directory_iterator(root / "src")) {
    if (!dir.is_directory()) continue;
    EXPECT_TRUE(area_ranks().count(dir.path().filename().string()))
        << "src/" << dir.path().filename().string() << " is not in area_ranks() (tests/layering_test.cpp): "
        << "place the new area in the order and in docs/ARCHITECTURE.md";
  }
  for (const auto& f : fs::directory_iterator(root / "include" / "atoll")) {
    auto it = public_header_areas().find(f.path().stem().string());
    EXPECT_TRUE(it != public_header_areas().end() && area_ranks().count(it->second))
        << "include/atoll/" << f.path().filename().string() << " belongs to no area in public_header_areas()";
  }
}

TEST(Layering, NoAreaIncludesItsOwnRankOrAbove) {
  const std::vector<Include> all = every_include();
  ASSERT_GT(all.size(), 100u) << "the include scan found too few includes to mean anything";
  for (const Include& inc : all) {
    auto from = area_ranks().find(inc.from), to = area_ranks().find(inc.to);
    if (from == area_ranks().end() || to == area_ranks().end()) {
      ADD_FAILURE() << inc.file << ":" << inc.line << " #include \"" << inc.text << "\": unknown area '"
                    << (from == area_ranks().end() ? inc.from : inc.to) << "'";
      continue;
    }
    EXPECT_LT(to->second, from->second) << inc.file << ":" << inc.line << " #include \"" << inc.text
                                        << "\": " << inc.from << " (rank " << from->second << ") reaches "
                                        << (to->second == from->second ? "sideways" : "up") << " into " << inc.to
                                        << " (rank " << to->second << ")";
  }
}

// The scan is not vacuous: it sees a known downward include and would flag
// one pointing the other way.
TEST(Layering, ScanSeesKnownIncludes) {
  bool seen = false;
  for (const Include& inc : every_include())
    if (inc.file == "src/setup/validate.cpp" && inc.to == "strategy") seen = true;
  EXPECT_TRUE(seen) << "src/setup/validate.cpp includes strategy/table.h; the scan missed it";
  EXPECT_EQ(area_of("atoll/whatif.h"), "report");
  EXPECT_EQ(area_of("strategy/table.h"), "strategy");
  EXPECT_EQ(area_of("table.h"), "");
}

}  // namespace
