// FileDeclaration: the declaration file on disk, as a DeclarationSource.
//
// Opened once: the digest and the text are read through the same
// descriptor, so a file renamed over the path in between is not mixed in.
// The digest is hashed 64 KiB at a time; the text is read only when asked.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/adapters/unique_fd.h"
#include "host/core/minisign.h"
#include "host/core/result.h"
#include "host/ports/declaration_source.h"

namespace mesh::adapters {

class FileDeclaration : public ports::DeclarationSource {
 public:
  // The declaration must be a regular file (a FIFO or a directory is refused,
  // never waited on) of at most core::kMaxDeclarationBytes. Errors read
  // "declaration PATH: why".
  static core::Result<std::unique_ptr<FileDeclaration>> Open(const std::string& path);

  core::Result<std::string> Digest() override;
  core::Result<std::string_view> Text() override;
  // After this, Digest() and Text() are refused: read again, the file could
  // be other bytes than the ones parsed.
  void ReleaseText() override;
  // PATH.minisig: a regular file of at most 64 KiB.
  core::Result<ports::DetachedSignature> Signature() override;
  // From the descriptor opened (the same file, even if renamed over since).
  core::Result<std::string> TextAgain() override;
  // As opened (the mode of the descriptor read, not of a later file).
  std::optional<Exposed> ReadableByOthers() const override;
  // As opened: the file's owner and mode, and the directories from the
  // one that holds it up to / (as --verify-key's are checked).
  std::optional<std::string> ChangeableByOthers() const override { return changeable_; }
  // From the descriptor: the file read, not where the path leads now.
  std::optional<std::string> OpenedAt() const override { return opened_at_; }
  // The path followed when asked (adapters::LinksOnTheWay): only a full
  // pass asks, so a no-op proven from the record walks nothing.
  std::vector<std::string> LinksOnTheWay() const override;

 private:
  FileDeclaration(std::string path, UniqueFd fd, size_t size, uint32_t mode,
                  std::optional<std::string> changeable, std::optional<std::string> opened_at)
      : path_(std::move(path)),
        fd_(std::move(fd)),
        size_(size),
        mode_(mode),
        changeable_(std::move(changeable)),
        opened_at_(std::move(opened_at)) {}

  std::string path_;
  UniqueFd fd_;
  size_t size_;
  uint32_t mode_;
  std::optional<std::string> changeable_;
  std::optional<std::string> opened_at_;
  std::optional<std::string> text_;
  bool released_ = false;
};

// The --verify-key file: a minisign public key. Errors read
// "--verify-key PATH: why" (unreadable, not a regular file, malformed).
core::Result<core::MinisignKey> ReadVerifyKey(const std::string& path);

}  // namespace mesh::adapters
