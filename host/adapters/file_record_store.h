// FileRecordStore: the record as <state-dir>/state.json, the intent as
// <state-dir>/intent.json, and the lock that keeps two mesh-host processes
// from applying to one machine at once.
#pragma once

#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <type_traits>

#include "host/adapters/posix_file_system.h"
#include "host/adapters/unique_fd.h"
#include "host/ports/record_store.h"

namespace mesh::adapters {

class FileRecordStore : public ports::RecordStore {
 public:
  // Refuses a state directory, record or intent owned by another user or
  // writable by group or others. With `create`, makes the state directory
  // (0700) when missing and may
  // write in it; without, it only reads, and a missing directory is a
  // machine with no record yet (what plan needs: it must not write). `keep`: hold the last record
  // read or written in memory, re-reading state.json only when someone else changed it (the daemon:
  // its no-op then parses nothing); without, Scan streams the file (a one-shot apply, which never
  // needs the record whole when nothing changed).
  // `made`: as PosixFileSystem::Open's, and what the caller's own mkdirs
  // made before: the state directory is this process's if it is there.
  static core::Result<std::unique_ptr<FileRecordStore>> Open(
      const std::string& state_dir, bool create, bool keep = false,
      std::vector<std::string>* made = nullptr);

  core::Result<std::shared_ptr<const core::Record>> Load() override;
  core::Result<bool> Scan(core::RecordVisitor& visitor) override;
  std::optional<uint64_t> KeptRecordVersion() const override {
    return keep_ ? std::optional<uint64_t>(version_) : std::nullopt;
  }
  core::Status Save(core::Record record) override;
  // Spills the entries to an unnamed file in the state directory, never
  // holding them; sorts ids and where each text lies at Commit.
  core::Result<std::unique_ptr<ports::RecordBuilder>> BuildRecord() override;
  core::Result<core::Intent> LoadIntent() override;
  core::Status SaveIntent(const core::Intent& intent) override;
  // <state-dir>/last-good.json, 0600, trusted as the record is.
  core::Result<core::LastGood> LoadLastGood() override;
  core::Status SaveLastGood(const core::LastGood& last_good, std::string_view machine) override;
  // <state-dir>/kept-artifacts/SHA256, mode 0600, trusted as the record is.
  core::Status KeepArtifact(const std::string& sha256, const ArtifactReader& read) override;
  core::Result<std::string> KeptArtifact(const std::string& sha256) override;
  core::Status KeepOnlyArtifacts(const std::set<std::string>& sha256s) override;
  // <state-dir>/digest.key: 32 random bytes, 0600, made by the first apply
  // that needs it; read once per process.
  DigestKey LoadDigestKey() override;

  // Takes an exclusive lock on <state-dir>/lock and on <state-dir> itself
  // for the life of this object; fails at once, naming the holder's
  // purpose, if another process has either.
  core::Status Lock();
  // After a refusal that wrote no record, in a state directory this
  // process made (Open's mkdir): removes the lock file and the digest key
  // this process made, so that the directory itself can go and the machine
  // is left as it was. Nothing otherwise.
  void RemoveWhatARefusalLeft();

  // A record of up to this many bytes is read whole, in one read (and a
  // change while it is read shows in its size); a larger one is streamed a
  // line at a time and never held whole. Both are read by one reader
  // (core::ParseRecord). Tests set it lower to stream small records.
  static constexpr uint64_t kWholeRecordBytes = 8ull << 20;
  void set_whole_record_bytes(uint64_t bytes) { whole_record_bytes_ = bytes; }
  // Tests only: called once state.json is opened and trusted, before a
  // byte of it is read (where another writer may still change it).
  void set_after_open_for_testing(std::function<void()> hook) { after_open_ = std::move(hook); }

 private:
  class SpillingBuilder;
  FileRecordStore(std::unique_ptr<PosixFileSystem> fs, bool writable, bool keep)
      : fs_(std::move(fs)), writable_(writable), keep_(keep) {}
  // Opens state.json, refuses it unless trusted, and runs `whole` over its
  // text, or `streamed` over it as a stream when it is large. `read` (if not null): the stat of the
  // file opened.
  template <typename Whole, typename Streamed>
  std::invoke_result_t<Streamed, std::istream&> Read(Whole whole, Streamed streamed,
                                                     core::FileInfo* read);

  // Fails when <state-dir>/NAME exists and is not this process's own.
  core::Status CheckFile(const char* name);
  // Fails when <state-dir> itself is no longer this process's own alone:
  // looked at on every read, not only at Open (a daemon runs for months).
  core::Status CheckDir();

  core::Result<core::FileInfo> WriteDurably(const std::string& path, std::string_view text);
  core::Result<core::FileInfo> WriteDurably(const std::string& path,
                                            const ports::FileSystem::ContentProducer& produce);

  std::unique_ptr<PosixFileSystem> fs_;
  bool writable_;
  bool keep_;
  uint64_t whole_record_bytes_ = kWholeRecordBytes;
  std::function<void()> after_open_;
  UniqueFd lock_fd_;
  UniqueFd dir_lock_fd_;
  bool made_dir_ = false;  // Open's mkdir made the state directory
  bool made_key_ = false;  // LoadDigestKey wrote digest.key
  // What state.json held when this process last read or wrote it, and its
  // stat fingerprint: the daemon re-parses it only if someone else changed it.
  std::shared_ptr<const core::Record> cached_;
  std::string cached_fingerprint_;
  uint64_t version_ = 0;  // KeptRecordVersion: moves with cached_
  DigestKey digest_key_;
};

}  // namespace mesh::adapters
