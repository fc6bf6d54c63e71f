// A file descriptor that closes itself: the POSIX adapters' RAII handle;
// the one loop that reads a file of known size through one; and a stream
// buffer over one, for parsers that read a large file a chunk at a time.
#pragma once

#include <unistd.h>

#include <array>
#include <cerrno>
#include <expected>
#include <streambuf>
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

// An input stream buffer reading `fd` 64 KiB at a time: a parser pulls a
// file of tens of megabytes through it (the record at 100,000 resources)
// without the file ever being resident whole. error() is the errno of a
// failed read, which ends the stream early.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd) {}
  int error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    ssize_t r;
    do {
      r = ::read(fd_, buffer_.data(), buffer_.size());
    } while (r < 0 && errno == EINTR);
    if (r < 0) error_ = errno;
    if (r <= 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + r);
    return traits_type::to_int_type(*gptr());
  }

 private:
  int fd_;
  int error_ = 0;
  std::array<char, 64 << 10> buffer_;
};

}  // namespace mesh::adapters
