#include "host/daemon/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace mesh::daemon {
namespace {

// Points stderr at a file for the test's duration and returns what was
// written to it.
class StderrCapture {
 public:
  StderrCapture() {
    char tmpl[] = "/tmp/mesh-host-log.XXXXXX";
    fd_ = mkstemp(tmpl);
    path_ = tmpl;
    fflush(stderr);
    saved_ = dup(2);
    dup2(fd_, 2);
  }
  ~StderrCapture() {
    fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    close(fd_);
    unlink(path_.c_str());
  }
  std::string Text() {
    fflush(stderr);
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // "DEV:INODE" of the capture file, as systemd sets JOURNAL_STREAM.
  std::string Stream() {
    struct stat st;
    fstat(fd_, &st);
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }

 private:
  int fd_ = -1;
  int saved_ = -1;
  std::string path_;
};

TEST(LogTest, PlainLinesWhenStderrIsNotTheJournal) {
  unsetenv("JOURNAL_STREAM");
  StderrCapture capture;
  Log log;
  log.Line(Priority::kErr, "failed jail (service): dead");
  EXPECT_EQ(capture.Text(), "failed jail (service): dead\n");
}

TEST(LogTest, PriorityPrefixWhenStderrIsTheJournal) {
  StderrCapture capture;
  setenv("JOURNAL_STREAM", capture.Stream().c_str(), 1);
  Log log;
  log.Line(Priority::kErr, "failed jail (service): dead");
  log.Line(Priority::kInfo, "unchanged a (file): as declared");
  unsetenv("JOURNAL_STREAM");
  EXPECT_EQ(capture.Text(), "<3>failed jail (service): dead\n<6>unchanged a (file): as declared\n");
}

TEST(LogTest, StaleJournalStreamIsIgnored) {
  StderrCapture capture;
  setenv("JOURNAL_STREAM", "1:2", 1);  // inherited, not what stderr is
  Log log;
  log.Line(Priority::kErr, "x");
  unsetenv("JOURNAL_STREAM");
  EXPECT_EQ(capture.Text(), "x\n");
}

}  // namespace
}  // namespace mesh::daemon
