// A file descriptor that closes itself: the POSIX adapters' RAII handle;
// and the one loop that reads a file of known size through one.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <expected>
#include <string>
#include <utility>

namespace mesh::adapters {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Reads up to `size` bytes from `fd` straight into a string (no zero fill
// first: the declaration and the record are megabytes), fewer if the file
// is shorter. The error is the errno of a failed read.
inline std::expected<std::string, int> ReadUpTo(int fd, size_t size) {
  std::string out;
  int error = 0;
  out.resize_and_overwrite(size, [&](char* buf, size_t n) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, buf + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) error = errno;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  });
  if (error != 0) return std::unexpected(error);
  return out;
}

}  // namespace mesh::adapters
