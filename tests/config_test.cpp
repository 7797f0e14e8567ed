// Tests for the configuration: TOML parsing, overrides, validation, the
// defaults (Config{}), writing the resolved config and --help text.
#include "atoll/config.h"
#include "atoll/setup.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace fs = std::filesystem;
using namespace atl;

namespace {

using atl::testing::TempDir;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string joined_lines(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += e + "\n";
  return s;
}

// Errors from parsing `text` onto a default Config.
std::vector<std::string> toml_errors(const std::string& text, const std::string& source = "test.toml") {
  Config c;
  std::vector<std::string> errors;
  apply_toml(c, text, source, errors);
  return errors;
}

std::vector<std::string> override_errors(const std::vector<std::string>& overrides) {
  Config c;
  std::vector<std::string> errors;
  apply_overrides(c, overrides, errors);
  return errors;
}

// The defaults (Config{}'s initialisers), which validate cleanly.
Config default_config() { return Config{}; }

// ---------------------------------------------------------------- TOML errors

TEST(ConfigToml, UnknownKeyInKnownSectionIsNamed) {
  auto e = toml_errors("[train]\nsteps = 5\nstepz = 3\n");
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "unknown key 'train.stepz'")) << e[0];
}

TEST(ConfigToml, UnknownSectionIsNamed) {
  auto e = toml_errors("[trian]\nsteps = 3\n");
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "unknown section [trian]")) << e[0];
}

TEST(ConfigToml, WrongTypesAreNamedWithTheExpectedType) {
  struct Case {
    std::string text, key, expected;
  };
  const std::vector<Case> cases = {
      {"[train]\nsteps = \"10\"\n", "train.steps", "expected an integer"},    // string for int
      {"[train]\nsteps = 1.5\n", "train.steps", "expected an integer"},       // float for int
      {"[model]\nn_embd = 64.0\n", "model.n_embd", "expected an integer"},    // integral float for int
      {"[run]\noverwrite = 1\n", "run.overwrite", "expected true or false"},  // int for bool
      {"[run]\nname = 5\n", "run.name", "expected a string"},                 // number for string
      {"[optim]\nlr = \"fast\"\n", "optim.lr", "expected a number"},          // string for float
  };
  for (const Case& c : cases) {
    auto e = toml_errors(c.text);
    ASSERT_EQ(e.size(), 1u) << c.text << joined_lines(e);
    EXPECT_TRUE(contains(e[0], c.key)) << e[0];
    EXPECT_TRUE(contains(e[0], c.expected)) << e[0];
  }
}

TEST(ConfigToml, SyntaxErrorNamesSourceAndLine) {
  auto e = toml_errors("[train]\nsteps = 3\nbatch_size = = 4\n", "my_run.toml");
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "my_run.toml:3:")) << e[0];
  EXPECT_TRUE(contains(e[0], "syntax error")) << e[0];
}

TEST(ConfigToml, TopLevelKeyOutsideSectionIsNamed) {
  auto e = toml_errors("steps = 3\n[train]\nbatch_size = 4\n");
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "top-level key 'steps'")) << e[0];
  EXPECT_TRUE(contains(e[0], "[section]")) << e[0];
}

TEST(ConfigToml, IntLiteralIsAcceptedForFloatField) {
  Config c;
  std::vector<std::string> errors;
  apply_toml(c, "[optim]\nlr = 1\nmin_lr = 0\n", "test.toml", errors);
  EXPECT_TRUE(errors.empty()) << joined_lines(errors);
  EXPECT_EQ(c.optim.lr, 1.0);
  EXPECT_EQ(c.optim.min_lr, 0.0);
}

TEST(ConfigToml, EveryTomlErrorIsCollected) {
  auto e = toml_errors("top = 1\n[nope]\na = 1\n[train]\nstepz = 1\nsteps = \"x\"\n");
  EXPECT_EQ(e.size(), 4u) << joined_lines(e);
}

// ---------------------------------------------------------------- overrides

TEST(ConfigOverride, MissingEqualsSignIsNamed) {
  auto e = override_errors({"train.steps"});
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "'train.steps'")) << e[0];
  EXPECT_TRUE(contains(e[0], "section.key=value")) << e[0];
}

TEST(ConfigOverride, UnknownKeyIsNamed) {
  auto e = override_errors({"train.stepz=3"});
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "unknown key 'train.stepz'")) << e[0];
}

TEST(ConfigOverride, NonNumericIntIsNamed) {
  for (const std::string bad : {"abc", "12abc", "1.5", ""}) {
    auto e = override_errors({"train.steps=" + bad});
    ASSERT_EQ(e.size(), 1u) << bad << ": " << joined_lines(e);
    EXPECT_TRUE(contains(e[0], "train.steps")) << e[0];
    EXPECT_TRUE(contains(e[0], "expected an integer")) << e[0];
  }
}

TEST(ConfigOverride, ValuesAreParsedByFieldType) {
  Config c;
  std::vector<std::string> errors;
  apply_overrides(c, {"train.steps=7", "optim.lr=3e-4", "model.bias=true", "run.name=my run", "run.seed=-2"}, errors);
  EXPECT_TRUE(errors.empty()) << joined_lines(errors);
  EXPECT_EQ(c.train.steps, 7);
  EXPECT_EQ(c.optim.lr, 3e-4);
  EXPECT_TRUE(c.model.bias);
  EXPECT_EQ(c.run.name, "my run");
  EXPECT_EQ(c.run.seed, -2);
}

// ---------------------------------------------------------------- validation

TEST(ConfigValidate, EmbeddedDefaultIsValid) {
  Config c = default_config();
  EXPECT_TRUE(validate(c).empty()) << joined_lines(validate(c));
}

TEST(ConfigValidate, InvalidEnumListsAllowedValues) {
  Config c = default_config();
  c.strategy.name = "foo";
  auto e = validate(c);
  ASSERT_EQ(e.size(), 1u) << joined_lines(e);
  EXPECT_TRUE(contains(e[0], "strategy.name = 'foo'")) << e[0];
  EXPECT_TRUE(contains(e[0], "single | ddp | localsgd | diloco | sparta | sparta_diloco | noloco")) << e[0];
}

TEST(ConfigValidate, OutOfRangeValuesAreNamed) {
  struct Case {
    std::string what, key;
    std::function<void(Config&)> set;
  };
  const std::vector<Case> cases = {
      {"steps 0", "train.steps", [](Config& c) { c.train.steps = 0; }},
      {"dropout 1", "model.dropout", [](Config& c) { c.model.dropout = 1.0; }},
      {"n_embd % n_head", "model.n_embd",
       [](Config& c) {
         c.model.n_embd = 30;
         c.model.n_head = 4;
       }},
      {"min_lr > lr", "optim.min_lr", [](Config& c) { c.optim.min_lr = 2 * c.optim.lr; }},
      {"outer momentum 1", "diloco.outer_momentum", [](Config& c) { c.diloco.outer_momentum = 1.0; }},
      {"sparta p 1.5", "sparta.p", [](Config& c) { c.sparta.p = 1.5; }},
      {"sparta selector", "sparta.selector", [](Config& c) { c.sparta.selector = "topk"; }},
      {"sparta interval 0", "sparta.interval", [](Config& c) { c.sparta.interval = 0; }},
      {"sparta delay -1", "sparta.delay", [](Config& c) { c.sparta.delay = -1; }},
      {"sparta apply", "sparta.apply", [](Config& c) { c.sparta.apply = "add"; }},
      {"fault rate 1", "sparta.fault_rate", [](Config& c) { c.sparta.fault_rate = 1.0; }},
      {"cosine p with partitions", "sparta.p_schedule",
       [](Config& c) {
         c.sparta.p_schedule = "cosine";
         c.sparta.selector = "partitioned";
       }},
      {"cosine p above 1", "sparta.p_schedule",
       [](Config& c) {
         c.sparta.p_schedule = "cosine";
         c.sparta.p = 0.9;
       }},
      {"p 0 with partitions", "sparta.p = 0",
       [](Config& c) {
         c.sparta.p = 0;
         c.sparta.selector = "sequential";
       }},
      {"topology", "strategy.topology", [](Config& c) { c.strategy.topology = "star"; }},
      {"topology for ddp", "strategy.topology",
       [](Config& c) {
         c.strategy.name = "ddp";
         c.strategy.topology = "ring";
       }},
      {"noloco group 1", "noloco.group_size", [](Config& c) { c.noloco.group_size = 1; }},
      {"correlation -1", "strategy.correlation_every", [](Config& c) { c.strategy.correlation_every = -1; }},
      {"codec", "diloco.codec", [](Config& c) { c.diloco.codec = "fp3"; }},
      {"sparta topk", "sparta.codec", [](Config& c) { c.sparta.codec = "topk"; }},
      {"topk scope", "codec.topk_scope = 'layer': allowed values are tensor | global",
       [](Config& c) { c.codec.topk_scope = "layer"; }},
      {"bucket 0", "ddp.bucket_mb must be > 0", [](Config& c) { c.ddp.bucket_mb = 0; }},
      {"first bucket -1", "ddp.first_bucket_mb must be > 0", [](Config& c) { c.ddp.first_bucket_mb = -1; }},
      {"palsgd p 1", "palsgd.p", [](Config& c) { c.palsgd.p = 1.0; }},
      {"palsgd overshoot", "palsgd",
       [](Config& c) {
         c.strategy.name = "palsgd";
         c.strategy.workers = 2;
         c.optim.lr = 0.5;
         c.optim.min_lr = 0.0;
       }},
      {"demo int16 big chunk", "demo.index_dtype", [](Config& c) { c.demo.chunk = 256; }},
      {"streaming H not multiple of F", "streaming: diloco.inner_steps",
       [](Config& c) {
         c.strategy.name = "streaming";
         c.strategy.workers = 2;
         c.model.n_layer = 6;
         c.streaming.fragment_blocks = 2;
         c.diloco.inner_steps = 100;
       }},
      {"streaming overlap", "streaming.overlap",
       [](Config& c) {
         c.strategy.name = "streaming";
         c.strategy.workers = 2;
         c.diloco.inner_steps = 4;
         c.streaming.fragment_blocks = 1;
         c.streaming.overlap = 1;
       }},
  };
  for (const Case& k : cases) {
    Config c = default_config();
    k.set(c);
    auto e = validate(c);
    ASSERT_EQ(e.size(), 1u) << k.what << ": " << joined_lines(e);
    EXPECT_TRUE(contains(e[0], k.key)) << k.what << ": " << e[0];
  }
}

TEST(ConfigValidate, ImageModelsNeedMnistAndGptNeedsText) {
  struct Case {
    std::string kind, dataset;
    bool ok;
  };
  for (const Case& k : {Case{"mlp", "brown", false}, Case{"cnn", "brown", false}, Case{"gpt", "mnist", false},
                        Case{"mlp", "mnist", true}, Case{"cnn", "mnist", true}, Case{"gpt", "brown", true}}) {
    Config c = default_config();
    c.model.kind = k.kind;
    c.data.dataset = k.dataset;
    auto e = validate(c);
    if (k.ok) {
      EXPECT_TRUE(e.empty()) << k.kind << "/" << k.dataset << ": " << joined_lines(e);
    } else {
      ASSERT_EQ(e.size(), 1u) << k.kind << "/" << k.dataset << ": " << joined_lines(e);
      EXPECT_TRUE(contains(e[0], "model.kind = '" + k.kind + "'")) << e[0];
      EXPECT_TRUE(contains(e[0], "data.dataset = '" + k.dataset + "'")) << e[0];
    }
  }
}

TEST(ConfigValidate, ReportsEveryProblemAtOnce) {
  TempDir dir;
  std::string path =
      dir.write("three.toml", "[train]\nsteps = 0\n[model]\ndropout = 1.5\n[diloco]\nouter_momentum = 1.0\n");
  try {
    load_config(path, {});
    FAIL() << "a config with three problems was accepted";
  } catch (const ConfigError& err) {
    std::string msg = err.what();
    EXPECT_TRUE(contains(msg, "3 problems")) << msg;
    EXPECT_TRUE(contains(msg, "train.steps")) << msg;
    EXPECT_TRUE(contains(msg, "model.dropout")) << msg;
    EXPECT_TRUE(contains(msg, "diloco.outer_momentum")) << msg;
  }
}

TEST(ConfigLoad, BadInputThrowsConfigErrorNamingTheKey) {
  TempDir dir;
  std::string path = dir.write("bad.toml", "[train]\nstepz = 3\n");
  try {
    load_config(path, {"optim.lr=x"});
    FAIL() << "bad input was accepted";
  } catch (const ConfigError& err) {
    std::string msg = err.what();
    EXPECT_TRUE(contains(msg, "train.stepz")) << msg;
    EXPECT_TRUE(contains(msg, "optim.lr")) << msg;
  }
  EXPECT_THROW(load_config(dir.path("missing.toml"), {}), ConfigError);
}

// ---------------------------------------------------------------- loading

// One set of defaults: what a user gets with no config file is what a test
// gets from Config{} and what --help prints (describe_fields).
TEST(ConfigLoad, StructDefaultsAreWhatUsersGet) {
  const Config loaded = load_config("", {});
  EXPECT_EQ(flatten(loaded), flatten(Config{}))
      << describe_difference(flatten(loaded), flatten(Config{}), "load_config(\"\")", "Config{}");
  EXPECT_TRUE(validate(Config{}).empty()) << joined_lines(validate(Config{}));
  const std::string help = describe_fields();
  Config c;
  visit_fields(c, [&](FieldRef& f) {
    EXPECT_TRUE(contains(help, "--" + f.name + "=" + f.value_string())) << f.name << " default not in --help";
  });
}

// --help names each area's choices from its own table; no placeholder is left.
TEST(ConfigHelp, ChoicePlaceholdersAreFilled) {
  const std::string help = describe_fields();
  EXPECT_EQ(help.find("{strategies}"), std::string::npos);
  EXPECT_EQ(help.find("{codecs}"), std::string::npos);
  EXPECT_EQ(help.find("{dense codecs}"), std::string::npos);
  EXPECT_EQ(help.find("{devices}"), std::string::npos);
  EXPECT_TRUE(contains(help, "sparta_diloco")) << "strategy.name's choices";
  EXPECT_TRUE(contains(help, "fp4-e2m1")) << "the codecs";
}

TEST(ConfigLoad, OverrideBeatsFileBeatsDefault) {
  TempDir dir;
  std::string path = dir.write("run.toml", "[train]\nsteps = 7\nbatch_size = 3\n");
  Config c = load_config(path, {"train.steps=9"});
  EXPECT_EQ(c.train.steps, 9);       // override over file
  EXPECT_EQ(c.train.batch_size, 3);  // file over the default (32)
  EXPECT_EQ(c.model.n_embd, 192);    // the default (Config{})
}

// ---------------------------------------------------------------- writing

TEST(ConfigRoundTrip, ToTomlParsesBackToTheSameText) {
  Config c = default_config();
  c.run.name = "quote\"and\\backslash";
  c.data.dir = "C:\\data\\\"x\"\\";
  c.run.seed = -42;
  c.run.overwrite = true;
  c.optim.lr = 1e-4;
  c.optim.min_lr = 1e-5;
  c.optim.beta2 = 0.1 + 0.2;  // needs all 17 digits
  c.model.bias = true;
  c.model.dropout = 0.1;
  c.network.device_flops = 3.5e20;
  c.network.bandwidth = "10Gbit/s";
  c.strategy.name = "diloco";
  c.strategy.workers = 8;
  const std::string text = to_toml(c);

  Config back;
  std::vector<std::string> errors;
  apply_toml(back, text, "resolved.toml", errors);
  ASSERT_TRUE(errors.empty()) << joined_lines(errors) << text;
  EXPECT_EQ(to_toml(back), text);
  EXPECT_EQ(back.run.name, c.run.name);
  EXPECT_EQ(back.data.dir, c.data.dir);
  EXPECT_EQ(back.run.seed, -42);
  EXPECT_EQ(back.optim.lr, 1e-4);
  EXPECT_EQ(back.optim.beta2, 0.1 + 0.2);
  EXPECT_EQ(back.network.device_flops, 3.5e20);
}

// A string containing a newline is valid config (written "a\nb" in TOML),
// so the resolved config must still parse back.
TEST(ConfigRoundTrip, StringWithControlCharacterRoundTrips) {
  Config c;
  std::vector<std::string> errors;
  apply_toml(c, "[data]\ndir = \"line1\\nline2\"\n", "in.toml", errors);
  ASSERT_TRUE(errors.empty()) << joined_lines(errors);
  ASSERT_EQ(c.data.dir, "line1\nline2");
  Config back;
  apply_toml(back, to_toml(c), "resolved.toml", errors);
  EXPECT_TRUE(errors.empty()) << joined_lines(errors);
  EXPECT_EQ(back.data.dir, c.data.dir);
}

TEST(ConfigHelp, DescribeFieldsMentionsEveryField) {
  const std::string help = describe_fields();
  Config c;
  int n = 0;
  std::set<std::string> names;
  visit_fields(c, [&](FieldRef& f) {
    ++n;
    names.insert(f.name);
    EXPECT_TRUE(contains(help, "--" + f.name + "=")) << f.name;
  });
  EXPECT_EQ(names.size(), size_t(n)) << "duplicate field names";
  EXPECT_GT(n, 40);
}

}  // namespace

TEST(ConfigValidate, BadNetworkUnitsAndPerWorkerListsAreReportedUpFront) {
  Config c;
  c.strategy.name = "ddp";
  c.strategy.workers = 2;
  c.network.bandwidth = "fast";
  c.network.speed_factors = "1,1,2";
  const auto errors = validate(c);
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("fast"), std::string::npos) << all;
  EXPECT_NE(all.find("network.speed_factors"), std::string::npos) << all;
}
