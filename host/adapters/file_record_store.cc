#include "host/adapters/file_record_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <string_view>
#include <type_traits>
#include <vector>

#include "host/core/want.h"

namespace mesh::adapters {

namespace {
constexpr const char* kStateFile = "/state.json";
constexpr const char* kIntentFile = "/intent.json";
constexpr const char* kLastGoodFile = "/last-good.json";
constexpr const char* kKeptArtifactsDir = "/kept-artifacts";
// A bundle's largest artifact (reconcile/observe.h's kMaxBundleBytes).
constexpr uint64_t kMaxKeptArtifactBytes = 1ull << 30;
using core::kMaxLastGoodBytes;
// The bare apply mark of hosts before the intent: still read as "an apply
// was interrupted" (with nothing known to be owed), removed on commit.
constexpr const char* kLegacyMark = "/applying";
// The secret that keys credentials' digests.
constexpr const char* kKeyFile = "/digest.key";
constexpr size_t kKeyBytes = 32;
constexpr uint64_t kMaxStateBytes = 512ull << 20;
constexpr uint64_t kMaxIntentBytes = 64ull << 20;

// The record decides what the host deletes: one planted by another user
// (a state.json naming /etc/shadow) would have the host delete for them.
// So the directory and what the host reads from it must be this process's
// own, and writable by nobody else.
core::Status CheckTrusted(const core::FileInfo& info, const std::string& shown) {
  auto euid = static_cast<uint32_t>(::geteuid());
  if (info.uid != euid) {
    return core::Fail(core::ErrorKind::kUntrusted,
                      shown + " is owned by uid " + std::to_string(info.uid) +
                          ", not by this process (uid " + std::to_string(euid) +
                          "); a record another user could have written is not trusted");
  }
  if ((info.mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", info.mode);
    return core::Fail(core::ErrorKind::kUntrusted,
                      shown + " has mode " + mode +
                          ", writable by group or others; a record another user could have "
                          "written is not trusted (chmod go-w)");
  }
  return core::Ok();
}

}  // namespace

core::Status FileRecordStore::CheckFile(const char* name) {
  auto info = fs_->Stat(name);
  if (!info) return std::unexpected(info.error());
  if (info->type == core::FileType::kMissing) return core::Ok();
  return CheckTrusted(*info, fs_->Shown(name));
}

core::Status FileRecordStore::CheckDir() {
  auto dir = fs_->StatRoot();
  if (!dir) return std::unexpected(dir.error());
  return CheckTrusted(*dir, fs_->Shown(""));
}

core::Result<std::unique_ptr<FileRecordStore>> FileRecordStore::Open(
    const std::string& state_dir, bool create, bool keep, std::vector<std::string>* made) {
  if (!create && ::access(state_dir.c_str(), F_OK) != 0 && errno == ENOENT) {
    return std::unique_ptr<FileRecordStore>(new FileRecordStore(nullptr, false, keep));
  }
  std::vector<std::string> mine;
  auto fs = PosixFileSystem::Open(state_dir, create, &mine);
  if (made != nullptr) made->insert(made->end(), mine.begin(), mine.end());
  if (!fs) return std::unexpected(fs.error());
  (*fs)->set_errors_name_root(true);
  auto dir = (*fs)->StatRoot();
  if (!dir) return std::unexpected(dir.error());
  if (auto st = CheckTrusted(*dir, state_dir); !st) return std::unexpected(st.error());
  // The record names every managed path and unit: keep it to root.
  if (create) {
    if (auto st = (*fs)->ChmodRoot(0700); !st) return std::unexpected(st.error());
  }
  std::unique_ptr<FileRecordStore> store(new FileRecordStore(std::move(*fs), create, keep));
  // Made by this call, or by the caller's own before it (a unit directory
  // inside it, made first).
  const std::vector<std::string>& all = made != nullptr ? *made : mine;
  store->made_dir_ =
      std::find(all.begin(), all.end(), PosixFileSystem::PathAsMade(state_dir)) != all.end();
  for (const char* name : {kStateFile, kIntentFile, kLegacyMark, kLastGoodFile}) {
    if (auto st = store->CheckFile(name); !st) return std::unexpected(st.error());
  }
  return store;
}

core::Result<std::shared_ptr<const core::Record>> FileRecordStore::Load() {
  if (fs_ == nullptr) return std::shared_ptr<const core::Record>();
  if (auto st = CheckDir(); !st) return std::unexpected(st.error());
  auto info = fs_->Stat(kStateFile);
  if (!info) return std::unexpected(info.error());
  if (info->type == core::FileType::kMissing) return std::shared_ptr<const core::Record>();
  // Unchanged since read (another file there has another inode): the file
  // trusted then. Anything else is opened, and trusted, by Read.
  if (cached_ != nullptr && core::FileFingerprint(*info) == cached_fingerprint_) return cached_;
  // The fingerprint kept is that of the file read, not of the path's stat.
  core::FileInfo read;
  auto record = Read([](std::string_view text) { return core::ParseRecord(text); },
                     [](std::istream& in) { return core::ParseRecord(in); }, &read);
  if (!record) return std::unexpected(record.error());
  auto loaded = std::make_shared<const core::Record>(std::move(*record));
  if (keep_) {
    cached_ = loaded;
    cached_fingerprint_ = core::FileFingerprint(read);
    ++version_;
  }
  return loaded;
}

core::Result<bool> FileRecordStore::Scan(core::RecordVisitor& visitor) {
  if (keep_) return RecordStore::Scan(visitor);
  if (fs_ == nullptr) return false;
  if (auto st = CheckDir(); !st) return std::unexpected(st.error());
  auto info = fs_->Stat(kStateFile);
  if (info && info->type == core::FileType::kMissing) return false;
  return Read([&](std::string_view text) { return core::ScanRecord(text, visitor); },
              [&](std::istream& in) { return core::ScanRecord(in, visitor); }, nullptr);
}

// The file opened is the one trusted and read, by its own size, not by an
// earlier look at the path: up to whole_record_bytes_ whole, in one read;
// past that, streamed a line at a time, never read whole or mapped: the
// record is 28 MB at 100,000 resources, and a whole copy of it would sit
// beside what is parsed from it at the apply's peak. A read error wins over
// the parse error it causes.
template <typename Whole, typename Streamed>
std::invoke_result_t<Streamed, std::istream&> FileRecordStore::Read(Whole whole, Streamed streamed,
                                                                    core::FileInfo* read) {
  auto opened = fs_->OpenRegular(kStateFile, kMaxStateBytes);
  if (!opened) return std::unexpected(opened.error());
  UniqueFd& fd = opened->first;
  auto info = PosixFileSystem::StatOpened(fd.get());
  if (!info) return std::unexpected(info.error());
  if (auto st = CheckTrusted(*info, fs_->Shown(kStateFile)); !st) {
    return std::unexpected(st.error());
  }
  if (read != nullptr) *read = *info;
  if (after_open_) after_open_();
  if (info->size <= whole_record_bytes_) {
    size_t size = static_cast<size_t>(info->size);
    auto text = std::make_unique_for_overwrite<char[]>(size);
    size_t got = 0;
    ssize_t n = 1;
    while (got < size && n != 0) {
      n = ::read(fd.get(), text.get() + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int error = errno;
        return core::Fail("read " + std::string(kStateFile) + ": " + std::strerror(error));
      }
      got += static_cast<size_t>(n);
    }
    // The host replaces state.json by renaming a new one over it, never in
    // place: a file that grew or shrank while it was read is someone else's
    // doing, read again at the next apply.
    char more;
    if (got != size || ::read(fd.get(), &more, 1) > 0) {
      return core::Fail(core::ErrorKind::kChanged,
                        "read " + std::string(kStateFile) + ": changed while it was read");
    }
    return whole(std::string_view(text.get(), size));
  }
  FdStreamBuf buffer(fd.get());
  std::istream in(&buffer);
  auto parsed = streamed(in);
  if (buffer.error() != 0) {
    return core::Fail("read " + std::string(kStateFile) + ": " + std::strerror(buffer.error()));
  }
  return parsed;
}

core::Result<core::FileInfo> FileRecordStore::WriteDurably(const std::string& path,
                                                           std::string_view text) {
  return WriteDurably(path,
                      [text](const ports::FileSystem::ContentSink& write) { return write(text); });
}

core::Result<core::FileInfo> FileRecordStore::WriteDurably(
    const std::string& path, const ports::FileSystem::ContentProducer& produce) {
  if (fs_ == nullptr || !writable_) return core::Fail("no writable state directory");
  ports::Ownership own{0600, static_cast<uint32_t>(::geteuid()),
                       static_cast<uint32_t>(::getegid())};
  auto written = fs_->WriteFileAtomicFrom(path, produce, own);
  if (!written) return std::unexpected(written.error());
  if (auto flushed = fs_->Flush(); !flushed) return std::unexpected(flushed.error());
  return written;
}

core::Status FileRecordStore::Save(core::Record record) {
  auto written = WriteDurably(kStateFile, [&](const ports::FileSystem::ContentSink& write) {
    return core::SerializeRecord(record, write);
  });
  if (!written) {
    cached_.reset();
    ++version_;
    return std::unexpected(written.error());
  }
  if (keep_) {
    record.version = core::Record::kVersion;  // what was written, whatever was read
    cached_ = std::make_shared<const core::Record>(std::move(record));
    cached_fingerprint_ = core::FileFingerprint(*written);
    ++version_;
  }
  return core::Ok();
}

// The entries' texts wait in an unnamed file in the state directory
// (O_TMPFILE: a process killed part way leaves nothing to sweep); memory
// holds each entry's id and where its text lies, some 40 bytes, against
// the 350 or so of its text and 600 of the entry itself.
class FileRecordStore::SpillingBuilder : public ports::RecordBuilder {
 public:
  SpillingBuilder(FileRecordStore& store, UniqueFd spill)
      : store_(store), spill_(std::move(spill)) {}

  core::Status Add(const std::string& id, const core::RecordEntry& entry) override {
    text_.clear();
    core::AppendRecordEntry(text_, id, entry);
    Spilled s{ids_.size(), id.size(), spilled_, text_.size()};
    if (auto st = WriteAll(text_); !st) return st;
    ids_ += id;
    index_.push_back(s);
    return core::Ok();
  }

  core::Status Commit(const core::Record& header) override {
    std::sort(index_.begin(), index_.end(),
              [&](const Spilled& a, const Spilled& b) { return IdOf(a) < IdOf(b); });
    for (size_t k = 1; k < index_.size(); ++k) {
      if (IdOf(index_[k - 1]) == IdOf(index_[k])) {
        return core::Fail("record entry " + std::string(IdOf(index_[k])) + " added twice");
      }
    }
    store_.cached_.reset();
    ++store_.version_;
    auto written = store_.WriteDurably(
        kStateFile, [&](const ports::FileSystem::ContentSink& write) -> core::Status {
          std::string piece = core::SerializeRecordHead(header, index_.size());
          for (const Spilled& s : index_) {
            size_t at = piece.size();
            piece.resize(at + s.bytes);
            if (auto st = ReadAll(piece.data() + at, s.bytes, s.offset); !st) return st;
            if (piece.size() >= kPieceBytes) {
              if (auto st = write(piece); !st) return st;
              piece.clear();
            }
          }
          return piece.empty() ? core::Ok() : write(piece);
        });
    if (!written) return std::unexpected(written.error());
    return core::Ok();
  }

 private:
  static constexpr size_t kPieceBytes = 64 << 10;
  struct Spilled {
    size_t id_at, id_bytes;  // in ids_
    uint64_t offset;         // in the spill
    size_t bytes;
  };
  std::string_view IdOf(const Spilled& s) const {
    return std::string_view(ids_).substr(s.id_at, s.id_bytes);
  }
  core::Status WriteAll(std::string_view text) {
    while (!text.empty()) {
      ssize_t n = ::pwrite(spill_.get(), text.data(), text.size(), static_cast<off_t>(spilled_));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return core::Fail(std::string("record spill: write: ") + std::strerror(errno));
      if (n == 0) return core::Fail("record spill: write: nothing written");
      spilled_ += static_cast<uint64_t>(n);
      text.remove_prefix(static_cast<size_t>(n));
    }
    return core::Ok();
  }
  core::Status ReadAll(char* out, size_t bytes, uint64_t offset) const {
    while (bytes > 0) {
      ssize_t n = ::pread(spill_.get(), out, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return core::Fail(std::string("record spill: read: ") + std::strerror(errno));
      if (n == 0) return core::Fail("record spill: shorter than written");
      out += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return core::Ok();
  }

  FileRecordStore& store_;
  UniqueFd spill_;
  uint64_t spilled_ = 0;
  std::string ids_;  // every id added, end to end
  std::vector<Spilled> index_;
  std::string text_;  // the entry being added
};

core::Result<std::unique_ptr<ports::RecordBuilder>> FileRecordStore::BuildRecord() {
  if (fs_ == nullptr || !writable_) return core::Fail("no writable state directory");
  int fd = ::open(fs_->root().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return core::Fail("record spill in " + fs_->Shown("") + ": " + std::strerror(errno));
  }
  return std::make_unique<SpillingBuilder>(*this, UniqueFd(fd));
}

core::Result<core::Intent> FileRecordStore::LoadIntent() {
  if (fs_ == nullptr) return core::Intent{};
  if (auto st = CheckDir(); !st) return std::unexpected(st.error());
  // The state directory is tiny: sweep it every time, so a kill while the
  // intent itself or the record was being written leaves nothing either.
  // Best effort: a leftover that cannot be removed now is removed later.
  if (writable_) (void)fs_->RemoveStaleTemporaries("/");
  core::Intent intent;
  auto info = fs_->Stat(kIntentFile);
  if (!info) return std::unexpected(info.error());
  if (info->type != core::FileType::kMissing) {
    if (auto st = CheckTrusted(*info, fs_->Shown(kIntentFile)); !st) {
      return std::unexpected(st.error());
    }
    auto text = fs_->ReadFile(kIntentFile, kMaxIntentBytes);
    if (!text) return std::unexpected(text.error());
    auto parsed = core::ParseIntent(*text);
    if (!parsed) return std::unexpected(parsed.error());
    intent = std::move(*parsed);
  }
  if (!intent.applying) {
    auto legacy = fs_->Stat(kLegacyMark);
    if (!legacy) return std::unexpected(legacy.error());
    intent.applying = legacy->type != core::FileType::kMissing;
  }
  return intent;
}

core::Status FileRecordStore::SaveIntent(const core::Intent& intent) {
  if (fs_ == nullptr || !writable_) return core::Fail("no writable state directory");
  // The intent supersedes the old mark, whatever it says.
  if (auto st = fs_->Remove(kLegacyMark); !st) return st;
  if (!intent.empty()) {
    auto written = WriteDurably(kIntentFile, core::SerializeIntent(intent));
    if (!written) return std::unexpected(written.error());
    return core::Ok();
  }
  if (auto st = fs_->Remove(kIntentFile); !st) return st;
  return fs_->Flush();
}

core::Result<core::LastGood> FileRecordStore::LoadLastGood() {
  if (fs_ == nullptr) return core::LastGood{};
  if (auto st = CheckDir(); !st) return std::unexpected(st.error());
  auto info = fs_->Stat(kLastGoodFile);
  if (!info) return std::unexpected(info.error());
  if (info->type == core::FileType::kMissing) return core::LastGood{};
  if (auto st = CheckTrusted(*info, fs_->Shown(kLastGoodFile)); !st) {
    return std::unexpected(st.error());
  }
  auto text = fs_->ReadFile(kLastGoodFile, kMaxLastGoodBytes);
  if (!text) return std::unexpected(text.error());
  return core::ParseLastGood(*text);
}

core::Status FileRecordStore::SaveLastGood(const core::LastGood& last_good,
                                           std::string_view machine) {
  if (fs_ == nullptr || !writable_) return core::Fail("no writable state directory");
  if (last_good.empty()) {
    if (auto st = fs_->Remove(kLastGoodFile); !st) return st;
    return fs_->Flush();
  }
  auto text = core::SerializeLastGood(last_good, machine);
  if (!text) return std::unexpected(text.error());
  // Never more than Load reads back: a file it refuses would stop every
  // apply after this one.
  if (text->size() > kMaxLastGoodBytes) {
    return core::Fail("the last good of the units under on_failure: rollback is " +
                      std::to_string(text->size()) + " bytes, over the " +
                      std::to_string(kMaxLastGoodBytes) + " kept");
  }
  auto written = WriteDurably(kLastGoodFile, *text);
  if (!written) return std::unexpected(written.error());
  return core::Ok();
}

namespace {

// A kept copy's name is its sha256, checked so that no other name is made.
std::optional<std::string> KeptArtifactPath(const std::string& sha256) {
  if (sha256.size() != 64 || sha256.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return std::nullopt;
  }
  return std::string(kKeptArtifactsDir) + "/" + sha256;
}

}  // namespace

core::Status FileRecordStore::KeepArtifact(const std::string& sha256, const ArtifactReader& read) {
  if (fs_ == nullptr || !writable_) return core::Fail("no writable state directory");
  auto path = KeptArtifactPath(sha256);
  if (!path) return core::Fail("not a sha256: " + sha256);
  auto info = fs_->Stat(*path);
  if (!info) return std::unexpected(info.error());
  if (info->type == core::FileType::kRegular && CheckTrusted(*info, fs_->Shown(*path))) {
    return core::Ok();
  }
  auto bytes = read();
  if (!bytes) return std::unexpected(bytes.error());
  auto written = WriteDurably(*path, *bytes);
  if (!written) return std::unexpected(written.error());
  return core::Ok();
}

core::Result<std::string> FileRecordStore::KeptArtifact(const std::string& sha256) {
  auto path = KeptArtifactPath(sha256);
  if (fs_ == nullptr || !path) return core::Fail("no copy of " + sha256 + " is kept");
  auto info = fs_->Stat(*path);
  if (!info) return std::unexpected(info.error());
  if (info->type != core::FileType::kRegular)
    return core::Fail("no copy of " + sha256 + " is kept");
  if (auto st = CheckTrusted(*info, fs_->Shown(*path)); !st) return std::unexpected(st.error());
  return fs_->ReadFile(*path, kMaxKeptArtifactBytes);
}

core::Status FileRecordStore::KeepOnlyArtifacts(const std::set<std::string>& sha256s) {
  if (fs_ == nullptr || !writable_) return core::Fail("no writable state directory");
  auto dir = fs_->Stat(kKeptArtifactsDir);
  if (!dir) return std::unexpected(dir.error());
  if (dir->type == core::FileType::kMissing) return core::Ok();
  auto entries = fs_->ScanTree(kKeptArtifactsDir, /*hash_contents=*/false);
  if (!entries) return std::unexpected(entries.error());
  core::Status out = core::Ok();
  for (const core::TreeEntry& e : *entries) {
    if (e.relpath.empty() || e.relpath.find('/') != std::string::npos ||
        sha256s.contains(e.relpath)) {
      continue;
    }
    if (auto st = fs_->RemoveFile(std::string(kKeptArtifactsDir) + "/" + e.relpath); !st && out) {
      out = st;
    }
  }
  if (sha256s.empty()) (void)fs_->RemoveEmptyDirectory(kKeptArtifactsDir);
  if (auto flushed = fs_->Flush(); !flushed && out) out = flushed;
  return out;
}

ports::RecordStore::DigestKey FileRecordStore::LoadDigestKey() {
  if (!digest_key_.bytes.empty()) return digest_key_;
  auto fresh = []() {
    std::string bytes(kKeyBytes, '\0');
    // getrandom blocks only before the kernel's pool is first initialised.
    for (size_t got = 0; got < bytes.size();) {
      ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (n < 0 && errno != EINTR) {
        // No getrandom (a kernel too old, a seccomp filter): the same pool.
        std::FILE* f = std::fopen("/dev/urandom", "rb");
        size_t read = f != nullptr ? std::fread(bytes.data(), 1, bytes.size(), f) : 0;
        if (f != nullptr) std::fclose(f);
        if (read != bytes.size()) std::abort();  // no randomness at all: never a guessable key
        break;
      }
    }
    return bytes;
  };
  auto for_now = [&](const std::string& why) {
    // Named once: the file system's own errors name it already.
    std::string named =
        why.find(kKeyFile) == std::string::npos ? fs_->Shown(kKeyFile) + ": " + why : why;
    digest_key_ = {fresh(), named +
                                "; credential digests use a key for this run only, so each "
                                "credential is compared by its content"};
    return digest_key_;
  };
  if (fs_ == nullptr) {
    digest_key_ = {fresh(), ""};
    return digest_key_;
  }
  auto info = fs_->Stat(kKeyFile);
  if (!info) return for_now(info.error().message);
  if (info->type == core::FileType::kMissing) {
    if (!writable_) {
      digest_key_ = {fresh(), ""};  // plan: no key yet, and it may not make one
      return digest_key_;
    }
    std::string bytes = fresh();
    auto written = WriteDurably(kKeyFile, bytes);
    if (!written) return for_now("cannot be made: " + written.error().message);
    made_key_ = true;
    digest_key_ = {std::move(bytes), ""};
    return digest_key_;
  }
  if (auto st = CheckTrusted(*info, fs_->Shown(kKeyFile)); !st) return for_now(st.error().message);
  if ((info->mode & 077) != 0 || info->size != kKeyBytes) {
    return for_now(
        "not a 32-byte file of mode 0600 (delete it and the next apply makes a new one)");
  }
  auto bytes = fs_->ReadFile(kKeyFile, kKeyBytes);
  if (!bytes || bytes->size() != kKeyBytes) {
    return for_now(bytes ? "shorter than 32 bytes" : bytes.error().message);
  }
  digest_key_ = {std::move(*bytes), ""};
  return digest_key_;
}

// Both the lock file and the state directory itself are locked: the file
// for a host of an older release, which locks only it; the directory
// because the file can be deleted under its holder (taken for a stale one),
// and the next process would lock a new one beside it.
core::Status FileRecordStore::Lock() {
  if (fs_ == nullptr) return core::Ok();
  // The lock file is never written: a refused apply leaves the state
  // directory as it was, so the holder cannot be named from it.
  auto held = [](const std::string& path) -> std::unexpected<core::Error> {
    return core::Fail(
        core::ErrorKind::kHeld,
        "another mesh-host process holds " + path +
            ": one process applies a state directory at a time (while `mesh-host run` "
            "holds it, `systemctl reload mesh-host` or SIGHUP makes it apply now)");
  };
  auto take = [&](const std::string& path, int flags) -> core::Result<UniqueFd> {
    UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC, 0600));
    if (!fd.valid()) return core::Fail("open " + path + ": " + std::strerror(errno));
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return held(path);
      return core::Fail("lock " + path + ": " + std::strerror(errno));
    }
    return fd;
  };
  std::string file_path = fs_->root() + "/lock";
  auto file = take(file_path, O_RDWR | O_CREAT | O_NOFOLLOW);
  if (!file) return std::unexpected(file.error());
  // The state directory as --state-dir names it, a link followed (as the
  // store itself opens it).
  auto dir = take(fs_->root(), O_RDONLY | O_DIRECTORY);
  if (!dir) return std::unexpected(dir.error());
  lock_fd_ = std::move(*file);
  dir_lock_fd_ = std::move(*dir);
  return core::Ok();
}

void FileRecordStore::RemoveWhatARefusalLeft() {
  if (fs_ == nullptr || !made_dir_) return;
  ::unlink((fs_->root() + "/lock").c_str());
  if (made_key_) ::unlink((fs_->root() + kKeyFile).c_str());
  made_key_ = false;
  digest_key_ = {};
}

}  // namespace mesh::adapters
