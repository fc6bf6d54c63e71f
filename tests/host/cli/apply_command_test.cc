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

}  // namespace
}  // namespace mesh::cli
