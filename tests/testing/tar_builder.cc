#include "tests/testing/tar_builder.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <stdexcept>

namespace mesh::testing {
namespace {

la_ssize_t Append(struct archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

}  // namespace

std::string BuildTar(const std::vector<TarMember>& members, bool gzip) {
  std::string out;
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (gzip) archive_write_add_filter_gzip(a);
  archive_write_set_bytes_in_last_block(a, 1);
  archive_write_open(a, &out, nullptr, &Append, nullptr);
  for (const TarMember& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_perm(e, m.mode);
    switch (m.type) {
      case TarMember::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(m.content.size()));
        break;
      case TarMember::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case TarMember::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, m.content.c_str());
        break;
      case TarMember::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, m.content.c_str());
        break;
      case TarMember::kFifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    }
    archive_write_header(a, e);
    if (m.type == TarMember::kFile) archive_write_data(a, m.content.data(), m.content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return out;
}

}  // namespace mesh::testing
