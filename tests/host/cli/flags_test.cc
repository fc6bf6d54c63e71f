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

}  // namespace
}  // namespace mesh::cli
