// A temporary directory for a test, removed with everything in it.
#pragma once

#include <string>

namespace mesh::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Small helpers for arranging and inspecting files in tests.
void WriteText(const std::string& path, const std::string& content, unsigned mode = 0644);
std::string ReadText(const std::string& path);
bool Exists(const std::string& path);

// Gives `path` an access ACL that names this process's own user (`group`
// bits for it, the group and the mask; `user` for the owner; none for
// others): access the mode does not show, while a mode of 0UG0 reads as
// it was. Bazel's sandbox maps no other user, so the test's own is named.
// False (errno set) where the file system has no POSIX ACLs.
bool GiveAcl(const std::string& path, unsigned user, unsigned group);
// Whether `path` carries an access ACL.
bool HasAcl(const std::string& path);

}  // namespace mesh::testing
