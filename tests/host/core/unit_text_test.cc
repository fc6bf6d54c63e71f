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

std::vector<std::string> Paths(std::string_view text) {
  std::vector<std::string> out;
  PathsUsed(text, out);
  return out;
}
using Words = std::vector<std::string>;

// Each path a command or a needed setting names, split where a path ends;
// not a condition, not one made optional, not outside what starts a unit.
TEST(UnitTextTest, ThePathsAUnitRunsFromAreTheWordsOfItsCommandsAndNeededSettings) {
  EXPECT_EQ(Paths("[Service]\nExecStart=/opt/api/bin/serve --port 80\n"),
            Words{"/opt/api/bin/serve"});
  EXPECT_EQ(Paths("[Service]\nExecStartPre=-/opt/api/bin/check\n"), Words{"/opt/api/bin/check"});
  EXPECT_EQ(Paths("[Service]\nExecStart=/bin/env PATH=/usr/bin:/opt/api/bin x\n"),
            (Words{"/bin/env", "/usr/bin", "/opt/api/bin"}));
  EXPECT_EQ(Paths("[Service]\nExecStart=/bin/x --config \"/etc/app.conf\"\n"),
            (Words{"/bin/x", "/etc/app.conf"}));
  EXPECT_EQ(Paths("[Service]\nExecStart=/bin/sh -c \"cd /srv/x&&./go\"\n"),
            (Words{"/bin/sh", "/srv/x"}));
  EXPECT_EQ(Paths("[Service]\nWorkingDirectory=/opt/api/\n"), Words{"/opt/api"});
  EXPECT_EQ(Paths("[Service]\nEnvironmentFile=/etc/default/api\n"), Words{"/etc/default/api"});
  EXPECT_EQ(Paths("[Service]\nBindReadOnlyPaths=/srv/app.data:/data\n"),
            (Words{"/srv/app.data", "/data"}));
  EXPECT_EQ(Paths("[Service]\nBindPaths=/a -/b\n"), Words{"/a"});
  EXPECT_EQ(Paths("[Service]\nLoadCredential=k:/srv/key\n"), Words{"/srv/key"});
  EXPECT_EQ(Paths("[Service]\nExecStart=/bin/sh -c \\\n  \"exec /srv/run.sh\"\n"),
            (Words{"/bin/sh", "/srv/run.sh"}));
  EXPECT_EQ(Paths("[Service]\nExecStart=/bin/sh \\\n# a comment\n  /srv/last \\"),
            (Words{"/bin/sh", "/srv/last"}));
  EXPECT_EQ(Paths("[Unit]\nConditionPathExists=!/opt/api\n"), Words{});
  EXPECT_EQ(Paths("[Service]\nExecCondition=/bin/test ! -e /srv/flag\n"), Words{});
  EXPECT_EQ(Paths("[Service]\nEnvironmentFile=-/etc/default/api\n"), Words{});
  EXPECT_EQ(Paths("[Service]\nWorkingDirectory=-/srv/w\n"), Words{});
  EXPECT_EQ(Paths("[Install]\nExecStart=/srv/x\n"), Words{});
}

}  // namespace
}  // namespace mesh::core
