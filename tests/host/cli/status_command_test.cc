#include "host/cli/status_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace mesh::cli {
namespace {

using ::testing::HasSubstr;

const char* kStatus = R"({
  "machine": "edge-1", "generation": 42, "declaration_digest": "abc", "healthy": false,
  "last_reconcile": {"started_at": "2026-11-30T04:00:00.000Z", "finished_at": "2026-11-30T04:00:01.000Z",
                     "duration_seconds": 1.0, "result": "failed", "counts": {"failed": 1}},
  "error": null,
  "resources": [
    {"id": "fail2ban.jail", "kind": "file", "outcome": "updated", "detail": "wrote 22 byte(s), mode 0644",
     "applied_at": "x", "digest": "sha256:1"},
    {"id": "fail2ban.service", "kind": "service", "outcome": "failed",
     "detail": "failed (Result=exit-code) 1.0 s after restart, and a long tail that goes on and on past eighty columns",
     "applied_at": "x", "digest": "sha256:2",
     "unit": {"name": "fail2ban.service", "active_state": "failed", "sub_state": "failed",
              "result": "exit-code", "n_restarts": 0, "host_restarts": 3}}]})";

TEST(StatusCommandTest, TableFitsEightyColumnsAndSaysWhatIsWrong) {
  std::string table = FormatStatusTable(nlohmann::json::parse(kStatus));
  EXPECT_THAT(table, HasSubstr("machine edge-1  generation 42"));
  EXPECT_THAT(table, HasSubstr("NOT HEALTHY"));
  EXPECT_THAT(table, HasSubstr("fail2ban.service"));
  EXPECT_THAT(table, HasSubstr("failed/failed"));
  EXPECT_THAT(table, HasSubstr("failed/failed      0/3"));
  EXPECT_THAT(table, HasSubstr("failed (Result=exit-code) 1.0 s after restart"));
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

TEST(StatusCommandTest, UnreachableIsExit2) {
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://127.0.0.1:1", out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("unreachable"));
}

}  // namespace
}  // namespace mesh::cli
