// JSON from outside the process (util/json_input.h): nesting past the bound
// is refused before anything walks the document, and error messages never
// dump a whole value.
#include <gtest/gtest.h>

#include <string>

#include "util/json_input.h"

namespace atl {
namespace {

std::string nested(int levels, const std::string& inside = "") {
  return std::string(size_t(levels), '[') + inside + std::string(size_t(levels), ']');
}

std::string json_error_of(const std::string& text) {
  try {
    parse_json_input(text, "peer.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonInput, SixtyFourLevelsAreReadAndSixtyFiveAreRefusedNamingTheSourceAndTheBound) {
  EXPECT_EQ(parse_json_input(nested(kMaxJsonDepth, "1"), "peer.json").dump(), nested(kMaxJsonDepth, "1"));
  EXPECT_EQ(parse_json_input("{\"a\": " + nested(kMaxJsonDepth - 1) + "}", "peer.json").size(), 1u);
  const std::string what = json_error_of(nested(kMaxJsonDepth + 1));
  EXPECT_EQ(what.rfind("peer.json: ", 0), 0u) << what;
  EXPECT_NE(what.find("deeper than 64 levels"), std::string::npos) << what;
  EXPECT_NE(json_error_of("{\"a\": " + nested(kMaxJsonDepth) + "}").find("at byte 69"), std::string::npos);
  // 400,000 levels (a meta.json of that depth once crashed training): refused, not parsed.
  EXPECT_NE(json_error_of(nested(400000)).find("deeper than 64 levels"), std::string::npos);
  // Unclosed brackets count too: the parser never sees them.
  EXPECT_NE(json_error_of(std::string(400000, '{')).find("deeper than 64 levels"), std::string::npos);
}

TEST(JsonInput, BracketsInsideStringsDoNotCountAndEscapedQuotesDoNotEndAString) {
  const std::string brackets = std::string(1000, '[') + "\\\"" + std::string(1000, '{');
  const nlohmann::json j = parse_json_input("{\"s\": \"" + brackets + "\", \"t\": [1]}", "peer.json");
  EXPECT_EQ(j.at("s").get<std::string>().size(), 2001u);
  EXPECT_EQ(j.at("t").size(), 1u);
  // Malformed text is the parser's to report.
  EXPECT_THROW(parse_json_input("]]]{", "peer.json"), nlohmann::json::parse_error);
  EXPECT_THROW(parse_json_input("\"open", "peer.json"), nlohmann::json::parse_error);
}

TEST(JsonInput, AValueInAMessageIsDescribedNeverDumpedWhole) {
  EXPECT_EQ(describe_json_value(nlohmann::json::parse("[[1], 2, 3]")), "an array of 3 values");
  EXPECT_EQ(describe_json_value(nlohmann::json::parse("{\"a\": {\"b\": 1}}")), "an object of 1 key");
  EXPECT_EQ(describe_json_value(nlohmann::json::parse("-5.5")), "-5.5");
  EXPECT_EQ(describe_json_value(nlohmann::json::parse("\"byte\"")), "\"byte\"");
  EXPECT_EQ(describe_json_value(nlohmann::json(std::string(100, 'x'))),
            "\"" + std::string(40, 'x') + "\" (cut from 100 bytes)");
  // Invalid UTF-8 is shown replaced, not thrown on.
  EXPECT_NE(describe_json_value(nlohmann::json(std::string("a\xff"))).find("a"), std::string::npos);
}

}  // namespace
}  // namespace atl
