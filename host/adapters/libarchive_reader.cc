#include "host/adapters/libarchive_reader.h"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <memory>
#include <new>
#include <stdexcept>

namespace mesh::adapters {

using core::Fail;
using core::FileType;
using core::TreeEntry;

core::Result<std::vector<TreeEntry>> LibarchiveReader::Read(std::string_view bytes,
                                                            uint64_t max_expanded) {
  // A bundle is unpacked into memory: under a memory limit an allocation
  // may fail, and that is a refusal of this bundle, not an abort.
  try {
    return ReadInMemory(bytes, std::min(max_expanded, kMaxExpandedBytes));
  } catch (const std::bad_alloc&) {
    return Fail("out of memory unpacking the bundle");
  } catch (const std::length_error&) {
    return Fail("out of memory unpacking the bundle");
  }
}

core::Result<std::vector<TreeEntry>> LibarchiveReader::ReadInMemory(std::string_view bytes,
                                                                    uint64_t max_expanded) {
  std::unique_ptr<struct archive, decltype(&archive_read_free)> a(archive_read_new(),
                                                                  &archive_read_free);
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_none(a.get());
  archive_read_support_format_tar(a.get());
  archive_read_support_format_gnutar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    return Fail(std::string("bundle is not a tar or tar.gz archive: ") +
                archive_error_string(a.get()));
  }
  std::vector<TreeEntry> out;
  uint64_t expanded = 0;
  struct archive_entry* entry = nullptr;
  for (;;) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      return Fail(std::string("bundle is damaged: ") + archive_error_string(a.get()));
    }
    if (out.size() >= kMaxEntries) {
      return Fail("bundle has more than " + std::to_string(kMaxEntries) + " entries");
    }
    TreeEntry e;
    const char* name = archive_entry_pathname(entry);
    e.relpath = name != nullptr ? name : "";
    e.mode = archive_entry_perm(entry) & 07777;
    if (const char* hard = archive_entry_hardlink(entry); hard != nullptr) {
      e.type = FileType::kHardlink;
      e.link_target = hard;
    } else {
      switch (archive_entry_filetype(entry)) {
        case AE_IFREG:
          e.type = FileType::kRegular;
          break;
        case AE_IFDIR:
          e.type = FileType::kDirectory;
          break;
        case AE_IFLNK:
          e.type = FileType::kSymlink;
          if (const char* t = archive_entry_symlink(entry)) e.link_target = t;
          break;
        default:
          e.type = FileType::kOther;
          break;
      }
    }
    if (e.type == FileType::kRegular) {
      la_int64_t size = archive_entry_size(entry);
      if (size < 0 || expanded + static_cast<uint64_t>(size) > max_expanded) {
        return Fail("bundle expands beyond " + std::to_string(max_expanded) + " bytes");
      }
      e.content.resize(static_cast<size_t>(size));
      la_ssize_t got = archive_read_data(a.get(), e.content.data(), e.content.size());
      if (got < 0 || static_cast<size_t>(got) != e.content.size()) {
        return Fail("bundle entry \"" + e.relpath + "\" is truncated");
      }
      expanded += static_cast<uint64_t>(size);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace mesh::adapters
