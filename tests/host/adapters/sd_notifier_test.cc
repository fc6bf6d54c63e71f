// SdNotifier against a notify socket of the test's own: what systemd would
// read, and that libsystemd is mapped only while a notification is sent.
#include "host/adapters/sd_notifier.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace mesh::adapters {
namespace {

bool LibsystemdMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libsystemd.so") != std::string::npos) return true;
  }
  return false;
}

class SdNotifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    // A socket path must fit in 108 bytes: not under Bazel's TEST_TMPDIR
    // when that is long.
    std::string dir = tmp != nullptr && std::strlen(tmp) < 80 ? tmp : "/tmp";
    path_ = dir + "/notify." + std::to_string(getpid());
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path_.size(), sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    unlink(path_.c_str());
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
    unsetenv("NOTIFY_SOCKET");
  }
  std::string Received() {
    char buf[256];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
  std::string path_;
  int fd_ = -1;
};

TEST_F(SdNotifierTest, WithoutANotifySocketNothingIsLoadedOrSent) {
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  SdNotifier notifier;
  notifier.Ready();
  notifier.Watchdog();
  EXPECT_EQ(notifier.WatchdogInterval().count(), 0);
  EXPECT_EQ(notifier.Unavailable(), "");
  EXPECT_FALSE(LibsystemdMapped());
  EXPECT_EQ(Received(), "");
}

// Loaded for each call and closed after: a daemon that only notifies does
// not keep libsystemd and the six libraries it brings between pings.
TEST_F(SdNotifierTest, EachCallIsSentAndLibsystemdIsNotKept) {
  setenv("NOTIFY_SOCKET", path_.c_str(), 1);
  SdNotifier notifier;
  EXPECT_EQ(notifier.Unavailable(), "");
  notifier.Ready();
  EXPECT_EQ(Received(), "READY=1");
  notifier.Status("applying generation 7");
  EXPECT_EQ(Received(), "STATUS=applying generation 7");
  notifier.Watchdog();
  EXPECT_EQ(Received(), "WATCHDOG=1");
  EXPECT_FALSE(LibsystemdMapped()) << "libsystemd stayed mapped after the calls";
}

TEST_F(SdNotifierTest, TheWatchdogIntervalIsHalfOfWhatSystemdSet) {
  setenv("WATCHDOG_USEC", "60000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  SdNotifier notifier;
  EXPECT_EQ(notifier.WatchdogInterval(), std::chrono::seconds(30));
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  EXPECT_FALSE(LibsystemdMapped());
}

}  // namespace
}  // namespace mesh::adapters
