#include "http/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace mesh::http {

core::Result<RegularFile> RegularFile::Open(const std::string& path) {
  RegularFile file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (file.fd_ < 0) return core::Fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(file.fd_, &st) != 0) return core::Fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return core::Fail("a directory, not a file");
  if (!S_ISREG(st.st_mode)) return core::Fail("not a regular file");
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

core::Result<std::string> RegularFile::Read(size_t max_bytes) {
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return core::Fail(std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > max_bytes) {
      return core::Fail("larger than " + std::to_string(max_bytes >> 20) + " MiB");
    }
    text.append(buf, static_cast<size_t>(n));
  }
}

std::string RegularFile::ProcPath() const { return "/proc/self/fd/" + std::to_string(fd_); }

}  // namespace mesh::http
