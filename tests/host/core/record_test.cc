#include "host/core/record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::core {
namespace {

TEST(RecordTest, RoundTrips) {
  Record r;
  r.machine = "edge-1";
  r.generation = 7;
  r.declaration_digest = "abc";
  RecordEntry e;
  e.kind = "process";
  e.digest = "sha256:1";
  e.applied_at = "2026-11-30T00:00:00.000Z";
  e.unit = "node-tools.service";
  e.unit_file_fingerprint = "1:2:3:4";
  e.written.push_back({"/opt/node-tools", "tree:9", "sha256:2", 239, true});
  r.resources["node-tools.runtime"] = e;
  auto back = ParseRecord(SerializeRecord(r));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(back->generation, 7u);
  const RecordEntry& b = back->resources.at("node-tools.runtime");
  EXPECT_EQ(b.digest, "sha256:1");
  EXPECT_EQ(b.unit_file_fingerprint, "1:2:3:4");
  ASSERT_EQ(b.written.size(), 1u);
  EXPECT_EQ(b.written[0].file_count, 239u);
  EXPECT_TRUE(b.written[0].preexisting);
}

TEST(RecordTest, CorruptIsAnErrorNotACrash) {
  for (const char* bad :
       {"", "{", "[]", "{\"version\": 99}", "{\"version\":1,\"machine\":3}",
        "{\"version\":1,\"machine\":\"m\",\"generation\":1,\"declaration_digest\":\"\","
        "\"resources\":{\"a\":{\"kind\":\"file\"}}}"}) {
    EXPECT_FALSE(ParseRecord(bad).has_value()) << bad;
  }
}

// Found by tools/fuzz: a huge float where an integer belongs made nlohmann
// cast it to int, undefined behaviour (caught by --config=ubsan).
TEST(RecordTest, HugeNumbersAreErrorsNotUndefinedBehaviour) {
  for (
      const char* bad :
      {R"({"version":10080802379.81177,"x":"abc"})", R"({"version":-1})",
       R"({"version":1,"want_version":1e300,"machine":"m","generation":1,"declaration_digest":"","resources":{}})",
       R"({"version":1,"machine":"m","generation":-5e40,"declaration_digest":"","resources":{}})",
       R"({"version":1,"machine":"m","generation":1,"declaration_digest":"","resources":{"a":{"kind":"file","digest":"d","applied_at":"t","written":[{"path":"/a","fingerprint":"f","files":1e99}]}}})"}) {
    EXPECT_FALSE(ParseRecord(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace mesh::core
