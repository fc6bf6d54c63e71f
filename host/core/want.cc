#include "host/core/want.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <set>

#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::core {
namespace {

// Bumped when the meaning of a digest changes, so an old record is not
// mistaken for the new shape.
constexpr std::string_view kDigestVersion = "mesh-host/want/1";

std::string_view TypeName(FileType t) {
  switch (t) {
    case FileType::kMissing:
      return "missing";
    case FileType::kRegular:
      return "file";
    case FileType::kDirectory:
      return "dir";
    case FileType::kSymlink:
      return "symlink";
    case FileType::kHardlink:
      return "hardlink";
    case FileType::kOther:
      return "other";
  }
  return "?";
}

std::vector<const TreeEntry*> Sorted(const std::vector<TreeEntry>& entries) {
  std::vector<const TreeEntry*> out;
  out.reserve(entries.size());
  for (const TreeEntry& e : entries) out.push_back(&e);
  std::sort(out.begin(), out.end(),
            [](const TreeEntry* a, const TreeEntry* b) { return a->relpath < b->relpath; });
  return out;
}

}  // namespace

std::string WantDigest(const Resource& r, std::string_view credential_key) {
  Sha256 h;
  h.Field(kDigestVersion).Field(KindName(r.kind));
  switch (r.kind) {
    case Kind::kFile:
    case Kind::kCredential:
      h.Field(r.path).Field(r.mode).Field(r.owner).Field(r.group).Field(r.content);
      break;
    case Kind::kArchive:
      h.Field(r.path).Field(r.sha256);
      break;
    case Kind::kDirectory:
      h.Field(r.path).Field(r.mode).Field(r.owner).Field(r.group);
      break;
    case Kind::kSymlink:
      h.Field(r.path).Field(r.target);
      break;
    case Kind::kService:
      h.Field(r.unit().name).Field(UnitStateName(r.unit().state));
      h.Field(r.unit().text.has_value() ? 1 : 0).Field(r.unit().text.value_or(""));
      break;
    case Kind::kProcess:
      h.Field(r.path).Field(r.sha256).Field(r.unit().name);
      h.Field(r.unit().text.has_value() ? 1 : 0).Field(r.unit().text.value_or(""));
      break;
  }
  // Hashed in only when declared: a resource without it keeps the digest
  // it had before the field existed (a new digest would be a change).
  if (r.unit().enabled.has_value()) h.Field("enabled").Field(*r.unit().enabled ? 1 : 0);
  if (!r.unit().drop_ins.empty()) {
    h.Field("drop_ins").Field(r.unit().drop_ins.size());
    for (const auto& [name, text] : r.unit().drop_ins) h.Field(name).Field(text);
  }
  if (r.kind == Kind::kCredential) {
    return "hmac-sha256:" + HmacSha256Hex(credential_key, h.HexDigest());
  }
  return "sha256:" + h.HexDigest();
}

namespace {
// Four integers of at most 20 characters and three colons.
struct FingerprintText {
  char buf[96];
  size_t size = 0;
  explicit FingerprintText(const FileInfo& info) {
    char* p = buf;
    char* end = buf + sizeof buf;
    p = std::to_chars(p, end, info.size).ptr;
    *p++ = ':';
    p = std::to_chars(p, end, info.mtime_ns).ptr;
    *p++ = ':';
    p = std::to_chars(p, end, info.ctime_ns).ptr;
    *p++ = ':';
    p = std::to_chars(p, end, info.inode).ptr;
    size = static_cast<size_t>(p - buf);
  }
  std::string_view view() const { return std::string_view(buf, size); }
};
}  // namespace

std::string DirectoryFingerprint(const FileInfo& info) {
  return "dir:" + std::to_string(info.mode) + ":" + std::to_string(info.uid) + ":" +
         std::to_string(info.gid) + ":" + std::to_string(info.inode) +
         (info.access_acl ? ":acl" : "");
}

std::string FileMeta(uint32_t mode, uint32_t uid, uint32_t gid) {
  char text[40];
  int n = std::snprintf(text, sizeof text, "%04o:%u:%u", mode & 07777, uid, gid);
  return std::string(text, static_cast<size_t>(n));
}

std::string FileDigest(std::string_view meta, std::string_view bytes) {
  Sha256 h;
  h.Field(meta);
  h.Update(bytes);
  return h.HexDigest().substr(0, 32);
}

std::string FileFingerprint(const FileInfo& info) {
  return std::string(FingerprintText(info).view());
}

bool FingerprintMatches(const FileInfo& info, std::string_view recorded) {
  return FingerprintText(info).view() == recorded;
}

std::optional<FileStamp> ParseFingerprint(std::string_view recorded) {
  FileStamp stamp;
  const char* p = recorded.data();
  const char* end = p + recorded.size();
  auto field = [&](auto& value, bool last) {
    auto [next, ec] = std::from_chars(p, end, value);
    if (ec != std::errc() || next == p) return false;
    p = next;
    if (last) return p == end;
    if (p == end || *p != ':') return false;
    ++p;
    return true;
  };
  if (!field(stamp.size, false) || !field(stamp.mtime_ns, false) || !field(stamp.ctime_ns, false) ||
      !field(stamp.inode, true)) {
    return std::nullopt;
  }
  // from_chars takes "007" and "-0": a text that does not read back as
  // written is not one FileFingerprint wrote.
  FileInfo info;
  info.size = stamp.size;
  info.mtime_ns = stamp.mtime_ns;
  info.ctime_ns = stamp.ctime_ns;
  info.inode = stamp.inode;
  if (!FingerprintMatches(info, recorded)) return std::nullopt;
  return stamp;
}

std::string TreeFingerprint(const std::vector<TreeEntry>& scanned) {
  Sha256 h;
  for (const TreeEntry* e : Sorted(scanned)) {
    h.Field(e->relpath).Field(TypeName(e->type)).Field(e->info.mode);
    h.Field(FileFingerprint(e->info));
  }
  return "tree:" + h.HexDigest();
}

bool TreeRootAsMade(const FileInfo& root, const std::vector<TreeEntry>& scanned,
                    std::string_view path, const std::optional<HostIds>& writer,
                    const StatDir& stat) {
  if (root.mode != kTreeRootMode) return false;
  if (writer.has_value()) {
    if (root.uid != writer->uid) return false;
    if (root.gid != writer->gid) {
      constexpr uint32_t kSetgid = 02000;
      size_t slash = path.rfind('/');
      if (slash == 0 || slash == std::string_view::npos) return false;  // under the root itself
      auto parent = stat(std::string(path.substr(0, slash)));
      if (!parent || parent->type != FileType::kDirectory || (parent->mode & kSetgid) == 0 ||
          parent->gid != root.gid) {
        return false;
      }
    }
  }
  return std::all_of(scanned.begin(), scanned.end(), [&](const TreeEntry& e) {
    return e.info.uid == root.uid && e.info.gid == root.gid;
  });
}

std::string TreeDigest(const std::vector<TreeEntry>& entries) {
  Sha256 h;
  h.Field(kDigestVersion);
  for (const TreeEntry* e : Sorted(entries)) {
    h.Field(e->relpath).Field(TypeName(e->type)).Field(e->mode & 07777);
    h.Field(e->type == FileType::kRegular ? e->content_sha256 : "");
  }
  return "sha256:" + h.HexDigest();
}

void HashContents(std::vector<TreeEntry>& entries) {
  for (TreeEntry& e : entries) {
    if (e.type == FileType::kRegular) e.content_sha256 = Sha256Hex(e.content);
  }
}

namespace {

// An entry's path with "." and empty components dropped; ".." and what a
// file system cannot hold are refused.
Result<std::string> NormalEntryPath(const std::string& relpath, const std::string& name) {
  if (relpath.find('\0') != std::string::npos) return Fail(name + " has a NUL byte");
  if (!relpath.empty() && relpath[0] == '/') return Fail(name + " is absolute");
  std::string norm;
  size_t start = 0;
  int depth = 0;
  while (start <= relpath.size()) {
    size_t end = relpath.find('/', start);
    if (end == std::string::npos) end = relpath.size();
    std::string_view comp(relpath.data() + start, end - start);
    if (comp == "..") return Fail(name + " climbs out of its directory with ..");
    if (comp.size() > kMaxNameBytes) {
      return Fail(name + " has a name component of " + std::to_string(comp.size()) +
                  " bytes; at most " + std::to_string(kMaxNameBytes));
    }
    if (!comp.empty() && comp != ".") {
      if (++depth > kMaxTreeDepth) {
        return Fail(name + " nests deeper than " + std::to_string(kMaxTreeDepth) + " directories");
      }
      if (!norm.empty()) norm.push_back('/');
      norm.append(comp);
    }
    start = end + 1;
  }
  if (norm.size() > kMaxEntryPathBytes) {
    return Fail("entry \"" + Printable(relpath, 80) + "\" is " + std::to_string(norm.size()) +
                " bytes long; at most " + std::to_string(kMaxEntryPathBytes));
  }
  return norm;
}

Status CheckEntryType(const TreeEntry& e, const std::string& name) {
  switch (e.type) {
    case FileType::kSymlink:
      return Fail(name + " is a symlink (to \"" + e.link_target +
                  "\"); bundles may not carry links");
    case FileType::kHardlink:
      return Fail(name + " is a hard link (to \"" + e.link_target +
                  "\"); bundles may not carry links");
    case FileType::kOther:
      return Fail(name +
                  " is not a file or directory (a device, fifo or socket, or a special tar entry "
                  "such as a multi-volume part); bundles carry files and directories only");
    default:
      return Ok();
  }
}

// Calls `visit(parent)` for every proper ancestor of `relpath`, shallowest
// first.
template <typename Visit>
void ForEachParent(const std::string& relpath, Visit visit) {
  for (size_t slash = relpath.find('/'); slash != std::string::npos;
       slash = relpath.find('/', slash + 1)) {
    visit(std::string_view(relpath.data(), slash));
  }
}

// Completes checked entries: a file that is also the parent of another
// entry cannot be unpacked; the directories the entries imply are part of
// the tree exactly as if listed (SPEC), so `tar czf x bin/serve` and a tar
// that lists bin/ unpack to the same tree and have one digest: otherwise the
// tree scanned from disk never matches the bundle's.
Status AddImpliedDirectories(std::vector<TreeEntry>& entries) {
  std::set<std::string_view> non_dirs;
  std::set<std::string> dirs;
  for (const TreeEntry& e : entries) {
    if (e.type != FileType::kDirectory) non_dirs.insert(e.relpath);
    if (e.type == FileType::kDirectory) dirs.insert(e.relpath);
  }
  std::vector<std::string> implied;
  for (const TreeEntry& e : entries) {
    std::string_view blocked;
    ForEachParent(e.relpath, [&](std::string_view parent) {
      if (blocked.empty() && non_dirs.contains(parent)) blocked = parent;
      if (dirs.insert(std::string(parent)).second) implied.emplace_back(parent);
    });
    if (!blocked.empty()) {
      return Fail("entry \"" + e.relpath + "\" lies under \"" + std::string(blocked) +
                  "\", which is not a directory");
    }
  }
  for (std::string& dir : implied) {
    TreeEntry d;
    d.relpath = std::move(dir);
    d.type = FileType::kDirectory;
    d.mode = 0755;
    entries.push_back(std::move(d));
  }
  return Ok();
}

}  // namespace

Result<std::vector<TreeEntry>> CheckBundleEntries(std::vector<TreeEntry> entries) {
  std::set<std::string> seen;
  std::vector<TreeEntry> out;
  out.reserve(entries.size());
  for (TreeEntry& e : entries) {
    std::string name = "entry \"" + e.relpath + "\"";
    auto norm = NormalEntryPath(e.relpath, name);
    if (!norm) return std::unexpected(norm.error());
    if (auto st = CheckEntryType(e, name); !st) return std::unexpected(st.error());
    if (norm->empty()) {
      if (e.type == FileType::kDirectory) continue;  // "./" itself
      return Fail(name + " has no name");
    }
    if (!seen.insert(*norm).second) return Fail(name + " appears twice");
    e.relpath = std::move(*norm);
    out.push_back(std::move(e));
  }
  if (auto st = AddImpliedDirectories(out); !st) return std::unexpected(st.error());
  return out;
}

}  // namespace mesh::core
