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

}  // namespace mesh::testing
