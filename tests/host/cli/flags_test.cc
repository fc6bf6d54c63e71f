#include "host/cli/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::cli {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

TEST(FlagsTest, DefaultsAreTheContract) {
  auto f = ParseFlags({"apply"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->declaration, "/etc/mesh-host/declaration.json");
  EXPECT_EQ(f->state_dir, "/var/lib/mesh-host");
  EXPECT_EQ(f->root, "/");
  EXPECT_EQ(f->artifacts, "/var/lib/mesh-host/artifacts");
  EXPECT_EQ(f->unit_dir, "/etc/systemd/system");
  EXPECT_EQ(f->listen, "127.0.0.1:9479");
  EXPECT_EQ(f->interval, 5min);
  EXPECT_EQ(f->settle, 1s);
  EXPECT_FALSE(f->verbose) << "quiet by default";
  EXPECT_TRUE(ParseFlags({"run", "-v"})->verbose);
  EXPECT_TRUE(ParseFlags({"run", "--verbose", "--interval", "1m"})->verbose);
  // SPEC: `--log-level debug` adds every unchanged line.
  EXPECT_TRUE(ParseFlags({"run", "--log-level", "debug"})->verbose);
  EXPECT_TRUE(ParseFlags({"run", "--log-level=debug"})->verbose);
  EXPECT_FALSE(ParseFlags({"run", "--log-level", "info"})->verbose);
  auto bad = ParseFlags({"run", "--log-level", "trace"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message,
            "flag --log-level: \"trace\" is not info or debug (debug: every unchanged outcome "
            "too)");
  EXPECT_EQ(f->output, "text");
  EXPECT_EQ(ParseFlags({"plan", "--output", "json"})->output, "json");
  EXPECT_THAT(ParseFlags({"plan", "--output=yaml"}).error().message,
              HasSubstr("flag --output: \"yaml\" is not text or json"));
}

TEST(FlagsTest, BothSpellingsAndDurations) {
  auto f = ParseFlags({"run", "--settle=250ms", "--interval", "1m", "--root", "/srv/r"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->settle, 250ms);
  EXPECT_EQ(f->interval, 1min);
  EXPECT_EQ(f->root, "/srv/r");
}

TEST(FlagsTest, ErrorsNameTheFlag) {
  EXPECT_THAT(ParseFlags({"apply", "--sette", "1s"}).error().message,
              HasSubstr("unknown flag \"--sette\""));
  EXPECT_THAT(ParseFlags({"apply", "--settle", "1"}).error().message, HasSubstr("--settle"));
  // ADR 184 cannot be switched off: the second look needs a pause.
  for (const char* too_short : {"0s", "0ms", "99ms"}) {
    EXPECT_THAT(ParseFlags({"apply", "--settle", too_short}).error().message,
                HasSubstr("--settle: " + std::string(too_short) + " is below 100ms"));
  }
  EXPECT_EQ(ParseFlags({"apply", "--settle", "100ms"})->settle, 100ms);
  // --interval 1ms applied some 750 times a second, each a line of the log.
  for (const char* too_short : {"1ms", "999ms"}) {
    EXPECT_THAT(ParseFlags({"run", "--interval", too_short}).error().message,
                HasSubstr("--interval: " + std::string(too_short) + " is below 1s"));
  }
  EXPECT_EQ(ParseFlags({"run", "--interval", "1s"})->interval, 1s);
  EXPECT_THAT(ParseFlags({"apply", "--root", "rel"}).error().message, HasSubstr("--root"));
  EXPECT_THAT(ParseFlags({"apply", "--root"}).error().message, HasSubstr("needs a value"));
  EXPECT_THAT(ParseFlags({"frobnicate"}).error().message, HasSubstr("unknown verb"));
  EXPECT_EQ(ParseFlags({"status", "--prometheus", "http://p:9090"})->prometheus, "http://p:9090");
  EXPECT_THAT(ParseFlags({"status", "--prometheus", "http://p:9090", "--targets", "t.json"})
                  .error()
                  .message,
              HasSubstr("--prometheus asks Prometheus for the fleet: not with --url or --targets"));
}

TEST(FlagsTest, DiffIsForPlanAndVerifyKeyIsAPath) {
  EXPECT_TRUE(ParseFlags({"plan", "--diff"})->diff);
  EXPECT_FALSE(ParseFlags({"plan"})->diff);
  EXPECT_THAT(ParseFlags({"apply", "--diff"}).error().message,
              HasSubstr("flag --diff is for plan"));
  EXPECT_EQ(ParseFlags({"run", "--verify-key", "/etc/mesh-host/mesh.pub"})->verify_key,
            "/etc/mesh-host/mesh.pub");
  EXPECT_EQ(ParseFlags({"apply"})->verify_key, "") << "unsigned declarations by default";
}

// A flag the verb has no use for is said, not silently dropped: validate
// never looks under --root, so `validate --root DIR` said "valid" for
// paths an apply under that root refuses. Said and ignored, not refused:
// a wrapper's one set of flags for every verb keeps working.
TEST(FlagsTest, AFlagOfAnotherVerbIsSaid) {
  auto settle = ParseFlags({"validate", "--settle", "1s"});
  ASSERT_TRUE(settle.has_value());
  EXPECT_THAT(settle->ignored,
              ::testing::ElementsAre(
                  "flag --settle is for run and apply: validate does not use it (ignored)"));
  EXPECT_THAT(
      ParseFlags({"status", "--state-dir=/x"})->ignored,
      ::testing::ElementsAre(HasSubstr("flag --state-dir is for run, apply, plan and validate")));
  EXPECT_THAT(ParseFlags({"apply", "--listen", "127.0.0.1:1"})->ignored,
              ::testing::ElementsAre(HasSubstr("flag --listen is for run: apply does not use it")));
  EXPECT_THAT(ParseFlags({"plan", "--settle", "1s"})->ignored,
              ::testing::ElementsAre(HasSubstr("flag --settle is for run and apply")));
  EXPECT_THAT(ParseFlags({"status", "--user", "u", "--timeout", "5s"})->ignored,
              ::testing::IsEmpty());
  EXPECT_THAT(ParseFlags({"validate", "--artifacts", "/a", "--machine", "m", "--root", "/r",
                          "--state-dir", "/s", "--unit-dir", "/u"})
                  ->ignored,
              ::testing::IsEmpty());
  // Not a flag: refused as before (no verb takes a word), never matched
  // against the help's words.
  for (const char* word : {"FILE", "DIR", ""}) {
    auto r = ParseFlags({"status", word});
    ASSERT_FALSE(r.has_value()) << word;
    EXPECT_THAT(r.error().message, ::testing::Not(HasSubstr(" is for "))) << word;
  }
}

}  // namespace
}  // namespace mesh::cli

namespace mesh::cli {
namespace {

// Issue 40: each verb's own --help, and "did you mean" for a mistyped verb
// or flag.
TEST(FlagsTest, EachVerbHasItsOwnHelp) {
  auto apply = ParseFlags({"apply", "--help"});
  ASSERT_TRUE(apply);
  EXPECT_EQ(apply->verb, Verb::kHelp);
  EXPECT_EQ(apply->help_for, Verb::kApply);
  EXPECT_EQ(ParseFlags({"help", "status"})->help_for, Verb::kStatus);
  std::string a = UsageText(Verb::kApply);
  EXPECT_THAT(a, HasSubstr("usage: mesh-host apply [flags]"));
  EXPECT_THAT(a, HasSubstr("--settle DURATION"));
  EXPECT_THAT(a, ::testing::Not(HasSubstr("--listen")));
  EXPECT_THAT(a, ::testing::Not(HasSubstr("  status ")));
  std::string s = UsageText(Verb::kStatus);
  EXPECT_THAT(s, HasSubstr("--prometheus URL"));
  EXPECT_THAT(s, ::testing::Not(HasSubstr("--root")));
  std::string v = UsageText(Verb::kValidate);
  EXPECT_THAT(v, HasSubstr("exit 0 valid, 2 refused"));
  EXPECT_THAT(v, HasSubstr("--state-dir"));
  EXPECT_THAT(v, ::testing::Not(HasSubstr("--listen")));
  // The whole text still lists every verb and flag.
  std::string all = UsageText();
  for (const char* w : {"  run ", "  apply ", "  plan ", "  validate ", "  status ", "--listen",
                        "--prometheus", "--diff", "--version"}) {
    EXPECT_THAT(all, HasSubstr(w));
  }
}

TEST(FlagsTest, DidYouMean) {
  EXPECT_THAT(ParseFlags({"aply"}).error().message, HasSubstr("(did you mean \"apply\"?)"));
  EXPECT_THAT(ParseFlags({"valdiate"}).error().message, HasSubstr("(did you mean \"validate\"?)"));
  EXPECT_THAT(ParseFlags({"apply", "--setle", "1s"}).error().message,
              HasSubstr("unknown flag \"--setle\" (did you mean \"--settle\"?)"));
  EXPECT_THAT(ParseFlags({"plan", "--declaraton=x"}).error().message,
              HasSubstr("(did you mean \"--declaration\"?)"));
  // Nothing near: no guess.
  EXPECT_THAT(ParseFlags({"apply", "--frobnicate"}).error().message,
              ::testing::Not(HasSubstr("did you mean")));
  EXPECT_EQ(ParseFlags({"validate", "--declaration", "/tmp/d.json"})->verb, Verb::kValidate);
}

}  // namespace
}  // namespace mesh::cli
