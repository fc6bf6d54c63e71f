#include "host/cli/validate_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace mesh::cli {
namespace {

using ::testing::HasSubstr;

// The declaration's own text reaches validate's words (an unknown key, the
// machine's name). Printed raw, an OSC 52 sequence in a key wrote the
// operator's clipboard, and a newline in a machine forged a line of its
// own in a CI log; apply and plan escape the same text.
TEST(ValidateCommandTest, TheDeclarationsTextIsEscaped) {
  Validation refused;
  refused.declaration = "/tmp/d.json";
  refused.refusals = {"declaration, field \x1b]52;c;aGk=\x07: unknown field"};
  refused.warnings = {"unit x.service: \x1b[2J"};
  std::ostringstream out, err;
  EXPECT_EQ(PrintValidation(refused, false, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("field \\x1b]52;c;aGk=\\x07: unknown field"));
  Validation valid;
  valid.declaration = "/tmp/d.json";
  valid.machine = "edge\n::error::forged";
  std::ostringstream out2, err2;
  EXPECT_EQ(PrintValidation(valid, false, out2, err2), 0);
  EXPECT_THAT(out2.str(), HasSubstr("machine edge\\x0a::error::forged"));
  for (const std::string& text : {out.str() + err.str(), out2.str() + err2.str()}) {
    size_t lines = 0;
    for (char c : text) {
      EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n') << text;
      lines += c == '\n';
    }
    EXPECT_LE(lines, 3u) << text;
  }
}

}  // namespace
}  // namespace mesh::cli
