// FaultyFileSystem: a FileSystem that fails chosen writes with a chosen
// errno (ENOSPC, EACCES, EIO), delegating everything else. Root bypasses
// EACCES and a full disk is hard to arrange in a unit test; the failure
// paths still need to be walked. With a KillSwitch, nothing is written
// once the switch has killed the apply; `before_write` sees every write
// before it lands (a test checks what was saved by then).
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "host/ports/file_system.h"
#include "tests/fakes/kill_switch.h"

namespace mesh::fakes {

class FaultyFileSystem : public ports::FileSystem {
 public:
  explicit FaultyFileSystem(ports::FileSystem& real) : real_(real) {}

  void Heal() {
    failing_.clear();
    fail_flush_ = false;
    fail_durable_ = false;
  }

  // Flush fails with EIO (the disk lost what was written) from now on.
  void FailFlush() { fail_flush_ = true; }
  // MakeStagedDurable fails with EIO from now on.
  void FailDurable() { fail_durable_ = true; }
  int flushes() const { return flushes_; }
  // Paths looked at, through Stat and StatMany.
  size_t stats() const { return stats_; }
  // The most ReadFile was ever asked to read.
  uint64_t largest_read() const { return largest_read_; }
  // Called with the path before ReadFile reads it.
  std::function<void(const std::string&)> before_read;
  // Called with the path before RemoveFile removes it.
  std::function<void(const std::string&)> before_remove;

  // Writes to `path` fail with `err` from now on.
  void FailWrites(const std::string& path, int err) {
    failing_.insert(path);
    errno_ = err;
  }

  core::Result<core::FileInfo> Stat(const std::string& path) override {
    ++stats_;
    return real_.Stat(path);
  }
  std::vector<core::Result<core::FileInfo>> StatMany(
      std::span<const std::string_view> paths) override {
    stats_ += paths.size();
    return real_.StatMany(paths);
  }
  core::Status Flush() override {
    if (!Alive()) return core::Fail("killed");
    ++flushes_;
    if (fail_flush_) return core::Fail(std::string("fsync: ") + std::strerror(EIO));
    return real_.Flush();
  }
  core::Result<std::string> ReadFile(const std::string& path, uint64_t limit) override {
    largest_read_ = std::max(largest_read_, limit);
    if (before_read) before_read(path);
    return real_.ReadFile(path, limit);
  }
  core::Result<std::string> ReadFileAsSeen(const std::string& path,
                                           const core::FileInfo& seen) override {
    largest_read_ = std::max(largest_read_, seen.size);
    if (before_read) before_read(path);
    return real_.ReadFileAsSeen(path, seen);
  }
  core::Result<std::string> ReadLink(const std::string& path) override {
    return real_.ReadLink(path);
  }
  core::Result<core::FileInfo> WriteFileAtomicFrom(const std::string& path,
                                                   const ContentProducer& produce,
                                                   const ports::Ownership& own) override {
    if (!Alive()) return core::Fail("killed");
    if (before_write) before_write(path);
    if (failing_.contains(path)) return core::Fail("write " + path + ": " + std::strerror(errno_));
    return real_.WriteFileAtomicFrom(path, produce, own);
  }
  core::Result<ports::StagedFile> StageFile(const std::string& path,
                                            std::string_view content) override {
    if (!Alive()) return core::Fail("killed");
    if (before_stage) before_stage(path);
    if (failing_.contains(path)) return core::Fail("write " + path + ": " + std::strerror(errno_));
    return real_.StageFile(path, content);
  }
  core::Status MakeStagedDurable() override {
    if (!Alive()) return core::Fail("killed");
    if (fail_durable_) return core::Fail(std::string("syncfs: ") + std::strerror(EIO));
    return real_.MakeStagedDurable();
  }
  // before_write: when a staged file is put in place, the moment it lands.
  // Killed, its temporary goes as the next process's sweep would remove it
  // (in one process, the sweep spares its own).
  core::Result<core::FileInfo> PlaceStaged(const ports::StagedFile& staged,
                                           const ports::Ownership& own) override {
    if (!Alive()) {
      real_.DiscardStaged(staged);
      return core::Fail("killed");
    }
    if (before_write) before_write(staged.path);
    return real_.PlaceStaged(staged, own);
  }
  void DiscardStaged(const ports::StagedFile& staged) override { real_.DiscardStaged(staged); }
  core::Result<std::vector<core::TreeEntry>> ReplaceTree(
      const std::string& path, const std::vector<core::TreeEntry>& entries) override {
    if (!Alive()) return core::Fail("killed");
    if (before_write) before_write(path);
    if (failing_.contains(path)) return core::Fail("write " + path + ": " + std::strerror(errno_));
    return real_.ReplaceTree(path, entries);
  }
  core::Result<core::FileInfo> MakeDirectory(const std::string& path,
                                             const ports::Ownership& own) override {
    if (!Alive()) return core::Fail("killed");
    if (before_write) before_write(path);
    if (failing_.contains(path)) return core::Fail("mkdir " + path + ": " + std::strerror(errno_));
    return real_.MakeDirectory(path, own);
  }
  core::Result<core::FileInfo> MakeSymlink(const std::string& path,
                                           const std::string& target) override {
    if (!Alive()) return core::Fail("killed");
    if (before_write) before_write(path);
    if (failing_.contains(path))
      return core::Fail("symlink " + path + ": " + std::strerror(errno_));
    return real_.MakeSymlink(path, target);
  }
  core::Status RemoveEmptyDirectory(const std::string& path) override {
    if (!Alive()) return core::Fail("killed");
    if (failing_.contains(path)) return core::Fail("rmdir " + path + ": " + std::strerror(errno_));
    return real_.RemoveEmptyDirectory(path);
  }
  core::Result<std::vector<core::TreeEntry>> ScanTree(const std::string& path, bool hash) override {
    return real_.ScanTree(path, hash);
  }
  core::Status Remove(const std::string& path) override {
    if (!Alive()) return core::Fail("killed");
    if (failing_.contains(path)) return core::Fail("unlink " + path + ": " + std::strerror(errno_));
    return real_.Remove(path);
  }
  core::Status RemoveFile(const std::string& path) override {
    if (!Alive()) return core::Fail("killed");
    if (before_remove) before_remove(path);
    if (failing_.contains(path)) return core::Fail("unlink " + path + ": " + std::strerror(errno_));
    return real_.RemoveFile(path);
  }
  core::Result<int> RemoveStaleTemporaries(const std::string& dir) override {
    return real_.RemoveStaleTemporaries(dir);
  }
  core::Result<std::pair<uint32_t, uint32_t>> LookupIds(const std::string& owner,
                                                        const std::string& group) override {
    if (auto it = ids.find({owner, group}); it != ids.end()) return it->second;
    return real_.LookupIds(owner, group);
  }

  KillSwitch* kill = nullptr;
  // Names resolved otherwise than by the machine (a user renumbered).
  std::map<std::pair<std::string, std::string>, std::pair<uint32_t, uint32_t>> ids;
  std::function<void(const std::string& path)> before_write;
  // Sees every file staged, before its first byte is written.
  std::function<void(const std::string& path)> before_stage;

 private:
  bool Alive() { return kill == nullptr || kill->Alive(); }

  ports::FileSystem& real_;
  std::set<std::string> failing_;
  int errno_ = EIO;
  bool fail_flush_ = false;
  bool fail_durable_ = false;
  int flushes_ = 0;
  size_t stats_ = 0;
  uint64_t largest_read_ = 0;
};

}  // namespace mesh::fakes
