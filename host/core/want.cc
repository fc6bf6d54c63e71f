#include "host/core/want.h"

#include <algorithm>
#include <charconv>
#include <set>

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
      h.Field(r.unit).Field(UnitStateName(r.state));
      h.Field(r.unit_text.has_value() ? 1 : 0).Field(r.unit_text.value_or(""));
      break;
    case Kind::kProcess:
      h.Field(r.path).Field(r.sha256).Field(r.unit);
      h.Field(r.unit_text.has_value() ? 1 : 0).Field(r.unit_text.value_or(""));
      break;
  }
  // Hashed in only when declared: a resource without it keeps the digest
  // it had before the field existed (a new digest would be a change).
  if (r.enabled.has_value()) h.Field("enabled").Field(*r.enabled ? 1 : 0);
  if (!r.drop_ins.empty()) {
    h.Field("drop_ins").Field(r.drop_ins.size());
    for (const auto& [name, text] : r.drop_ins) h.Field(name).Field(text);
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
         std::to_string(info.gid) + ":" + std::to_string(info.inode);
}

std::string FileFingerprint(const FileInfo& info) {
  return std::string(FingerprintText(info).view());
}

bool FingerprintMatches(const FileInfo& info, std::string_view recorded) {
  return FingerprintText(info).view() == recorded;
}

std::string TreeFingerprint(const std::vector<TreeEntry>& scanned) {
  Sha256 h;
  for (const TreeEntry* e : Sorted(scanned)) {
    h.Field(e->relpath).Field(TypeName(e->type)).Field(e->info.mode);
    h.Field(FileFingerprint(e->info));
  }
  return "tree:" + h.HexDigest();
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

Result<std::vector<TreeEntry>> CheckBundleEntries(std::vector<TreeEntry> entries) {
  std::set<std::string> seen;
  std::vector<TreeEntry> out;
  out.reserve(entries.size());
  for (TreeEntry& e : entries) {
    std::string name = "entry \"" + e.relpath + "\"";
    if (e.relpath.find('\0') != std::string::npos) return Fail(name + " has a NUL byte");
    if (!e.relpath.empty() && e.relpath[0] == '/') return Fail(name + " is absolute");
    // Normalise: drop "." and empty components; refuse "..".
    std::string norm;
    size_t start = 0;
    int depth = 0;
    while (start <= e.relpath.size()) {
      size_t end = e.relpath.find('/', start);
      if (end == std::string::npos) end = e.relpath.size();
      std::string_view comp(e.relpath.data() + start, end - start);
      if (comp == "..") return Fail(name + " climbs out of its directory with ..");
      if (comp.size() > kMaxNameBytes) {
        return Fail(name + " has a name component of " + std::to_string(comp.size()) +
                    " bytes; at most " + std::to_string(kMaxNameBytes));
      }
      if (!comp.empty() && comp != ".") {
        if (++depth > kMaxTreeDepth) {
          return Fail(name + " nests deeper than " + std::to_string(kMaxTreeDepth) +
                      " directories");
        }
        if (!norm.empty()) norm.push_back('/');
        norm.append(comp);
      }
      start = end + 1;
    }
    switch (e.type) {
      case FileType::kSymlink:
        return Fail(name + " is a symlink (to \"" + e.link_target +
                    "\"); bundles may not carry links");
      case FileType::kHardlink:
        return Fail(name + " is a hard link (to \"" + e.link_target +
                    "\"); bundles may not carry links");
      case FileType::kOther:
        return Fail(name +
                    " is a device, fifo or socket; bundles carry files and directories only");
      default:
        break;
    }
    if (norm.empty()) {
      if (e.type == FileType::kDirectory) continue;  // "./" itself
      return Fail(name + " has no name");
    }
    if (!seen.insert(norm).second) return Fail(name + " appears twice");
    e.relpath = std::move(norm);
    out.push_back(std::move(e));
  }
  // A file that is also the parent of another entry cannot be unpacked.
  std::set<std::string_view> non_dirs;
  std::set<std::string> dirs;
  for (const TreeEntry& e : out) {
    if (e.type != FileType::kDirectory) non_dirs.insert(e.relpath);
    if (e.type == FileType::kDirectory) dirs.insert(e.relpath);
  }
  for (const TreeEntry& e : out) {
    for (size_t slash = e.relpath.find('/'); slash != std::string::npos;
         slash = e.relpath.find('/', slash + 1)) {
      std::string_view parent(e.relpath.data(), slash);
      if (non_dirs.contains(parent)) {
        return Fail("entry \"" + e.relpath + "\" lies under \"" + std::string(parent) +
                    "\", which is not a directory");
      }
    }
  }
  // Directories the entries imply are part of the tree exactly as if listed
  // (SPEC): `tar czf x bin/serve` and a tar that lists bin/ unpack to the
  // same tree and must have one digest, or the tree scanned from disk never
  // matches the bundle's (issue 14: a lost record re-unpacked and restarted).
  std::vector<std::string> implied;
  for (const TreeEntry& e : out) {
    for (size_t slash = e.relpath.find('/'); slash != std::string::npos;
         slash = e.relpath.find('/', slash + 1)) {
      std::string parent = e.relpath.substr(0, slash);
      if (dirs.insert(parent).second) implied.push_back(std::move(parent));
    }
  }
  for (std::string& dir : implied) {
    TreeEntry d;
    d.relpath = std::move(dir);
    d.type = FileType::kDirectory;
    d.mode = 0755;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace mesh::core
