#include "host/cli/apply_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "host/core/printable.h"

namespace mesh::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Issue 20: a refused plan said "the last applied state stays in force",
// the words of an apply; and a refusal quoting outside bytes is one line.
TEST(ApplyCommandTest, ARefusalSaysWhatThisVerbDid) {
  core::ApplyReport r;
  r.result = core::ApplyResult::kRefused;
  r.error = "resource x, field kind: unknown kind \"a\nfailed y (file): forged\"";
  std::ostringstream out, err;
  EXPECT_EQ(PrintReport(r, /*plan=*/true, out, err), kExitRefused);
  EXPECT_THAT(err.str(), HasSubstr("apply would refuse it too; a plan writes nothing"));
  EXPECT_THAT(err.str(), Not(HasSubstr("stays in force")));
  EXPECT_THAT(err.str(), Not(HasSubstr("\nfailed y")));
  std::ostringstream out2, err2;
  EXPECT_EQ(PrintReport(r, /*plan=*/false, out2, err2), kExitRefused);
  EXPECT_THAT(err2.str(), HasSubstr("nothing was written; the last applied state stays in force"));
}

// Several refusals, one per line; a newline inside one (outside bytes)
// stays escaped: only the list makes lines.
TEST(ApplyCommandTest, SeveralRefusalsOnePerLine) {
  core::ApplyReport r;
  r.result = core::ApplyResult::kRefused;
  r.error = "2 problems: resource a, field path: bad; resource b\nfailed x (file): forged";
  r.refusals = {"resource a, field path: bad", "resource b\nfailed x (file): forged"};
  std::ostringstream out, err;
  PrintReport(r, /*plan=*/false, out, err);
  EXPECT_EQ(err.str(),
            "mesh-host: declaration refused: 2 problems:\n"
            "mesh-host:   resource a, field path: bad\n"
            "mesh-host:   resource b\\x0afailed x (file): forged\n"
            "mesh-host: nothing was written; the last applied state stays in force\n");
}

// Issue 17: --output json carries the same outcomes as the text lines, one
// object per line, then a summary object.
TEST(ApplyCommandTest, JsonLinesCarryTheSameOutcomesAsTheText) {
  core::ApplyReport r;
  r.generation = 7;
  r.resources = 3;
  r.failed = 1;
  auto outcome = [](std::string id, std::string kind, core::Outcome what, std::string detail) {
    core::ResourceOutcome o;
    o.id = std::move(id);
    o.kind = std::move(kind);
    o.outcome = what;
    o.detail = std::move(detail);
    o.digest = "sha256:" + o.id;
    return o;
  };
  r.outcomes = {outcome("conf", "file", core::Outcome::kUpdated, "wrote 3 byte(s), mode 0644"),
                outcome("web", "service", core::Outcome::kFailed, "failed \"x\"\nand more"),
                outcome("key", "credential", core::Outcome::kUnchanged, "as declared")};
  r.outcomes[1].mutable_declared().unit = "web.service";
  r.result = core::ApplyResult::kFailed;
  std::ostringstream text, json, err;
  PrintReport(r, /*plan=*/false, text, err, Output::kText);
  EXPECT_EQ(PrintReport(r, /*plan=*/false, json, err, Output::kJson), kExitFailed);
  std::istringstream text_lines(text.str()), json_lines(json.str());
  std::string t, j;
  for (const core::ResourceOutcome& o : r.outcomes) {
    ASSERT_TRUE(std::getline(text_lines, t));
    ASSERT_TRUE(std::getline(json_lines, j));
    auto parsed = nlohmann::json::parse(j);
    EXPECT_EQ(t, std::string(core::OutcomeName(o.outcome)) + " " + o.id + " (" + o.kind +
                     "): " + core::Printable(o.detail));
    EXPECT_EQ(parsed["outcome"], core::OutcomeName(o.outcome));
    EXPECT_EQ(parsed["id"], o.id);
    EXPECT_EQ(parsed["kind"], o.kind);
    EXPECT_EQ(parsed["detail"], o.detail) << "the JSON string holds the bytes, escaped by JSON";
    EXPECT_EQ(parsed["digest"], o.digest);
    EXPECT_EQ(parsed.contains("unit"), o.id == "web");
  }
  ASSERT_TRUE(std::getline(json_lines, j));
  auto summary = nlohmann::json::parse(j)["summary"];
  EXPECT_EQ(summary["result"], "failed");
  EXPECT_EQ(summary["generation"], 7);
  EXPECT_EQ(summary["failed"], 1);
  EXPECT_FALSE(std::getline(json_lines, j)) << "nothing after the summary";

  core::ApplyReport refused;
  refused.result = core::ApplyResult::kRefused;
  refused.error = "2 problems: a; b";
  refused.refusals = {"a", "b"};
  std::ostringstream out;
  EXPECT_EQ(PrintReport(refused, /*plan=*/true, out, err, Output::kJson), kExitRefused);
  auto s = nlohmann::json::parse(out.str())["summary"];
  EXPECT_EQ(s["result"], "refused");
  EXPECT_EQ(s["verb"], "plan");
  EXPECT_EQ(s["refusals"], nlohmann::json({"a", "b"}));
}

// plan --diff: the blocks after the outcome lines (text), or one
// {"diff": ...} object each before the summary (JSON).
TEST(ApplyCommandTest, DiffsFollowTheOutcomes) {
  core::ApplyReport r;
  core::ResourceOutcome o;
  o.id = "app.conf";
  o.kind = "file";
  o.outcome = core::Outcome::kUpdated;
  o.detail = "would write 4 byte(s), mode 0644";
  r.outcomes.push_back(o);
  r.diffs = {"diff app.conf (file)\n--- a/etc/app.conf\n+++ b/etc/app.conf\n@@ -1 +1 @@\n-a\n+b\n"};
  std::ostringstream out, err;
  EXPECT_EQ(PrintReport(r, /*plan=*/true, out, err), kExitOk);
  EXPECT_EQ(out.str(),
            "updated app.conf (file): would write 4 byte(s), mode 0644\n\n" + r.diffs[0]);
  std::ostringstream json_out, json_err;
  PrintReport(r, /*plan=*/true, json_out, json_err, Output::kJson);
  std::istringstream lines(json_out.str());
  std::string line;
  std::vector<nlohmann::json> objects;
  while (std::getline(lines, line)) objects.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[1]["diff"], r.diffs[0]);
  EXPECT_TRUE(objects[2].contains("summary"));
}

}  // namespace
}  // namespace mesh::cli
