#include "host/cli/apply_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace mesh::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Issue 20: a refused plan said "the last applied state stays in force",
// the words of an apply; and a refusal quoting outside bytes is one line.
TEST(ApplyCommandTest, ARefusalSaysWhatThisVerbDid) {
  reconcile::ApplyReport r;
  r.result = reconcile::ApplyResult::kRefused;
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
  reconcile::ApplyReport r;
  r.result = reconcile::ApplyResult::kRefused;
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

}  // namespace
}  // namespace mesh::cli
