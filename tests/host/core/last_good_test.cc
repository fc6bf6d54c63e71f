#include "host/core/last_good.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;

LastGood OneUnit(size_t content_bytes) {
  Resource conf;
  conf.id = "jail.conf";
  conf.kind = Kind::kFile;
  conf.path = "/etc/jail.conf";
  conf.content = std::string(content_bytes, 'x');
  conf.mode = 0644;
  conf.owner = conf.group = "root";
  Resource unit;
  unit.id = "jaild";
  unit.kind = Kind::kService;
  unit.mutable_unit().name = "jaild.service";
  unit.mutable_unit().text = "[Service]\nExecStart=/usr/bin/jaild\n";
  LastGood lg;
  KeptUnit& k = lg.units["jaild"];
  k.generation = 14;
  k.resources["jail.conf"] = conf;
  k.resources["jaild"] = KeptCopy(unit);
  k.wants["jail.conf"] = "sha256:1";
  k.wants["jaild"] = "sha256:2";
  return lg;
}

// Each unit's kept resources are read back by the declaration's parser,
// which refuses a text over 64 MiB; the file as a whole was bounded at
// twice that. A unit kept between the two (a 50 MiB file is 67 MiB in
// base64) was saved, and every apply after it failed: "last good not
// readable ... nothing was changed". What is saved is what reads back.
TEST(LastGoodTest, WhatIsSavedIsWhatReadsBack) {
  auto small = SerializeLastGood(OneUnit(1 << 20), "m");
  ASSERT_TRUE(small.has_value()) << small.error().message;
  auto read = ParseLastGood(*small);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(read->units.at("jaild").resources.at("jail.conf").content.size(), 1u << 20);

  auto large = SerializeLastGood(OneUnit(50u << 20), "m");
  ASSERT_FALSE(large.has_value()) << "saved, and never read back";
  EXPECT_THAT(large.error().message, HasSubstr("the last good of jaild is "));
  EXPECT_FALSE(KeptUnitBytes("jaild", OneUnit(50u << 20).units.at("jaild"), "m").has_value());
  auto bytes = KeptUnitBytes("jaild", OneUnit(1 << 20).units.at("jaild"), "m");
  ASSERT_TRUE(bytes.has_value());
  EXPECT_GT(*bytes, (4u << 20) / 3) << "its content, base64";
}

// A hold an older host saved, its words with a character that reorders
// text (Printable did not escape those then): read, and held escaped.
TEST(LastGoodTest, AnOlderHostsHoldReadsBackEscaped) {
  LastGood lg = OneUnit(10);
  lg.units["jaild"].hold = Hold{.generation = 15,
                                .since = "2026-12-01T00:00:00Z",
                                .refused =
                                    "failed \xe2\x80\xae"
                                    "0.2 s after restart",
                                .wants = {{"jail.conf", "sha256:3"}}};
  auto text = SerializeLastGood(lg, "m");
  ASSERT_TRUE(text.has_value()) << text.error().message;
  auto read = ParseLastGood(*text);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(read->units.at("jaild").hold->refused, "failed \\xe2\\x80\\xae0.2 s after restart");
}

}  // namespace
}  // namespace mesh::core
