#include "host/core/unit_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mesh::core {
namespace {

TEST(UnitTextTest, SettingsComeWithTheirSectionTrimmed) {
  std::vector<std::string> seen;
  ForEachSetting(
      "# c\n[Unit]\n Description = a b \n\n[Service]\r\nExecStart=/bin/x --y=1\r\nbad\n",
      [&](std::string_view section, std::string_view key, std::string_view value) {
        seen.push_back(std::string(section) + "|" + std::string(key) + "|" + std::string(value));
      });
  EXPECT_EQ(seen,
            (std::vector<std::string>{"Unit|Description|a b", "Service|ExecStart|/bin/x --y=1"}));
}

TEST(UnitTextTest, OnlyAnInstallTargetIsSomethingToEnable) {
  EXPECT_TRUE(InstallsAnything("[Install]\nWantedBy=multi-user.target\n"));
  EXPECT_TRUE(InstallsAnything("[Install]\n  Alias = other.service\n"));
  EXPECT_FALSE(InstallsAnything("[Install]\nAlso=other.service\n"));
  EXPECT_FALSE(InstallsAnything("[Unit]\nWantedBy=multi-user.target\n[Install]\n"));
  EXPECT_FALSE(InstallsAnything("[Service]\nExecStart=/bin/x\n"));
}

TEST(UnitTextTest, ACommandRunsFromAPathOnlyWhenItNamesItWhole) {
  EXPECT_TRUE(RunsFrom("[Service]\nExecStart=/opt/api/bin/serve\n", "/opt/api"));
  EXPECT_TRUE(RunsFrom("[Service]\nExecStartPre=-/opt/api\n", "/opt/api"));
  EXPECT_TRUE(RunsFrom("[Service]\nExecStart=/bin/env PATH=/usr/bin:/opt/api/bin x\n", "/opt/api"));
  EXPECT_TRUE(
      RunsFrom("[Service]\nExecStart=/bin/x --config \"/etc/app.conf\"\n", "/etc/app.conf"));
  EXPECT_TRUE(RunsFrom("[Service]\nWorkingDirectory=/opt/api\n", "/opt/api"));
  EXPECT_FALSE(RunsFrom("[Service]\nExecStart=/opt/api-10/bin/serve\n", "/opt/api-1"));
  EXPECT_FALSE(RunsFrom("[Service]\nExecStart=/srv/opt/api/x\n", "/opt/api"));
  EXPECT_FALSE(RunsFrom("[Unit]\nConditionPathExists=!/opt/api\n", "/opt/api"));
  EXPECT_TRUE(RunsFrom("[Service]\nEnvironmentFile=/etc/default/api\n", "/etc/default/api"));
  EXPECT_FALSE(RunsFrom("[Service]\nEnvironmentFile=-/etc/default/api\n", "/etc/default/api"));
  EXPECT_FALSE(RunsFrom("[Service]\nExecStart=/bin/x\n", ""));
  EXPECT_TRUE(
      RunsFrom("[Service]\nExecStart=/bin/sh -c \\\n  \"exec /srv/run.sh\"\n", "/srv/run.sh"));
  EXPECT_TRUE(RunsFrom("[Service]\nExecStart=/bin/sh -c \"cd /srv/x&&./go\"\n", "/srv/x"));
  EXPECT_TRUE(RunsFrom("[Service]\nBindReadOnlyPaths=/srv/app.data:/data\n", "/srv/app.data"));
  EXPECT_TRUE(RunsFrom("[Service]\nLoadCredential=k:/srv/key\n", "/srv/key"));
  EXPECT_FALSE(RunsFrom("[Service]\nExecCondition=/bin/test ! -e /srv/flag\n", "/srv/flag"));
  EXPECT_FALSE(RunsFrom("[Service]\nWorkingDirectory=-/srv/w\n", "/srv/w"));
  EXPECT_FALSE(RunsFrom("[Install]\nExecStart=/srv/x\n", "/srv/x"));
  EXPECT_FALSE(RunsFrom("[Service]\nBindPaths=/a -/b\n", "/b"));
  EXPECT_TRUE(RunsFrom("[Service]\nBindPaths=/a -/b\n", "/a"));
  EXPECT_TRUE(RunsFrom("[Service]\nExecStartPre=-/opt/api/bin/check\n", "/opt/api"));
  EXPECT_TRUE(RunsFrom("[Service]\nWorkingDirectory=/opt/api/\n", "/opt/api"));
  EXPECT_TRUE(
      RunsFrom("[Service]\nExecStart=/bin/sh \\\n# a comment\n  /srv/last \\", "/srv/last"));
}

}  // namespace
}  // namespace mesh::core
