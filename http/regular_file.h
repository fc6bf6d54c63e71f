// A file the HTTP side reads at start and on SIGHUP (the web config, the
// TLS files), opened once without blocking and checked on what was
// opened: only a regular file is read. A FIFO would block the open (and
// the daemon's loop with it), a directory reads as an empty file, a
// device never ends; a path checked and then opened again could be any of
// them by then.
#pragma once

#include <cstddef>
#include <string>

#include "host/core/result.h"

namespace mesh::http {

class RegularFile {
 public:
  // Errors are the system's words, "a directory, not a file" or "not a
  // regular file"; the caller names the file.
  static core::Result<RegularFile> Open(const std::string& path);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;
  ~RegularFile();

  // The whole text, refused past `max_bytes`.
  core::Result<std::string> Read(size_t max_bytes);
  // `/proc/self/fd/N`: for a library that opens files by name only, so
  // that it opens this very file.
  std::string ProcPath() const;

 private:
  explicit RegularFile(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace mesh::http
