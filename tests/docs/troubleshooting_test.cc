// docs/troubleshooting.md held to what the host says (issue 40): every
// outcome word the host prints is defined there once, every alert it ships
// has its section, and every alert's runbook_url lands on that section.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "host/core/outcome.h"

namespace mesh {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// GitHub's anchor of a heading: lower case, spaces to dashes, punctuation dropped.
std::string Anchor(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (c == ' ') {
      out += '-';
    }
  }
  return out;
}

class TroubleshootingTest : public ::testing::Test {
 protected:
  std::string doc_ = Read("docs/troubleshooting.md");
  std::string rules_ = Read("metrics/alerts/mesh-host.rules.yml");
};

TEST_F(TroubleshootingTest, EveryOutcomeWordIsDefinedOnce) {
  for (core::Outcome o : core::kAllOutcomes) {
    std::string row = "\n| `" + std::string(core::OutcomeName(o)) + "` | ";
    size_t at = doc_.find(row);
    EXPECT_NE(at, std::string::npos) << "no definition of " << core::OutcomeName(o);
    EXPECT_EQ(doc_.find(row, at + 1), std::string::npos)
        << core::OutcomeName(o) << " is defined twice";
  }
}

TEST_F(TroubleshootingTest, EveryAlertHasItsSectionAndItsRunbookLandsThere) {
  std::set<std::string> anchors;
  std::istringstream lines(doc_);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("#")) anchors.insert(Anchor(line.substr(line.find(' ') + 1)));
  }
  std::regex alert(R"(- alert: (\w+))");
  std::regex runbook(
      R"(runbook_url: "file:///usr/share/doc/mesh-host/troubleshooting\.md#([\w-]+)\")");
  size_t alerts = 0;
  for (std::sregex_iterator it(rules_.begin(), rules_.end(), alert), end; it != end; ++it) {
    ++alerts;
    std::string name = (*it)[1];
    EXPECT_NE(doc_.find("\n### " + name + "\n"), std::string::npos) << "no section for " << name;
  }
  EXPECT_GE(alerts, 8u) << "the rules file was not read";
  size_t runbooks = 0;
  for (std::sregex_iterator it(rules_.begin(), rules_.end(), runbook), end; it != end; ++it) {
    ++runbooks;
    EXPECT_TRUE(anchors.contains((*it)[1])) << "runbook_url #" << (*it)[1] << " lands nowhere";
  }
  EXPECT_EQ(runbooks, alerts) << "an alert without a runbook_url";
}

// The words the host uses for what a unit is left in, each explained.
TEST_F(TroubleshootingTest, TheWordsOfAUnitAreExplained) {
  for (const char* words :
       {"failed (Result=exit-code)", "status 203/EXEC", "BadUnitSetting", "auto-restart",
        "died and was restarted by systemd", "skipped by systemd",
        "start failed:", "start not seen through", "left to its trigger", "still stopping",
        "still starting", "held at generation", "rolled back to generation",
        "not restarted: restart_on", "(the journal holds no line", "declaration refused"}) {
    EXPECT_NE(doc_.find(words), std::string::npos) << words;
  }
}

}  // namespace
}  // namespace mesh
