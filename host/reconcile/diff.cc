#include "host/reconcile/diff.h"

#include <map>
#include <set>

#include "host/core/printable.h"
#include "host/core/unified_diff.h"

namespace mesh::reconcile {
namespace {

using core::FileType;
using core::Resource;

// A bundle's member list is cut here: the rest is counted.
constexpr size_t kMaxListedMembers = 200;

std::string Header(const std::string& id, std::string_view kind) {
  return "diff " + id + " (" + std::string(kind) + ")\n";
}

std::string TypeWord(FileType type) {
  switch (type) {
    case FileType::kDirectory:
      return "a directory";
    case FileType::kSymlink:
      return "a symlink";
    case FileType::kRegular:
    case FileType::kHardlink:
      return "a file";
    default:
      return "something else";
  }
}

// The content part of a file's diff: headers and hunks, or one line that
// says why there are none.
std::string ContentDiff(const std::string& a_path, const std::string& b_path,
                        std::string_view before, std::string_view after) {
  auto hunks = core::UnifiedHunks(before, after);
  if (!hunks) {
    return std::string(core::IsText(before) && core::IsText(after) ? "large" : "binary") +
           " content, " + std::to_string(before.size()) + " → " + std::to_string(after.size()) +
           " bytes: not diffed\n";
  }
  if (hunks->empty()) return "";
  return "--- " + core::Printable(a_path) + "\n+++ " + core::Printable(b_path) + "\n" + *hunks;
}

// What is at a path now: its stat, and its bytes when it is a text file
// small enough to diff (else why not).
struct Current {
  core::FileInfo info;
  std::string content;
  std::string unreadable;  // why the content could not be read
};

Current Look(ports::FileSystem& fs, const std::string& path) {
  Current now;
  auto info = fs.Stat(path);
  if (!info) {
    now.unreadable = info.error().message;
    return now;
  }
  now.info = *info;
  if (info->type != FileType::kRegular) return now;
  auto bytes = fs.ReadFile(path, core::kMaxDiffBytes);
  if (bytes) {
    now.content = std::move(*bytes);
  } else {
    now.unreadable = info->size > core::kMaxDiffBytes
                         ? "large content, " + std::to_string(info->size) + " bytes"
                         : bytes.error().message;
  }
  return now;
}

// A file or a unit file that would be written: `shown` is its path as the
// diff names it (with its leading "/").
// `was_secret`: the record holds a credential at this path, so what is on
// the machine is never shown, whatever its mode.
std::string FileDiff(const Current& now, const std::string& shown, std::string_view content,
                     uint32_t mode, bool secret, const std::string& old_digest,
                     const std::string& want, bool was_secret = false) {
  std::string out;
  bool missing = now.info.type == FileType::kMissing && now.unreadable.empty();
  if (!now.unreadable.empty() && now.info.type != FileType::kRegular) {
    return "cannot look at " + core::Printable(shown) + ": " + core::Printable(now.unreadable) +
           "\n";
  }
  if (secret) {
    bool same =
        now.unreadable.empty() && now.info.type == FileType::kRegular && now.content == content;
    out += old_digest == want || old_digest.empty()
               ? (missing ? "new credential"
                  : same  ? "the content on the machine is as declared"
                          : "the content on the machine is not as declared")
               : "digest " + old_digest + " → " + want;
    return out + " (a credential: its content is not shown)\n";
  }
  if (missing) {
    return out + "new file, mode " + core::FormatMode(mode) + "\n" +
           ContentDiff("/dev/null", "b" + shown, "", content);
  }
  if (now.info.type != FileType::kRegular) {
    return out + "now " + TypeWord(now.info.type) + ": replaced by a file\n" +
           ContentDiff("/dev/null", "b" + shown, "", content);
  }
  if (!now.unreadable.empty()) {
    return out + core::Printable(now.unreadable) + " → " + std::to_string(content.size()) +
           " bytes: not diffed\n";
  }
  // What only its owner may read (a credential's old file, a key) may be
  // a secret, and a plan's output goes to CI logs: only the declared side
  // is shown.
  if (was_secret && now.content != content) {
    return out + "the content on the machine is not shown (the host wrote a credential there)\n" +
           ContentDiff("/dev/null", "b" + shown, "", content);
  }
  if (now.content != content && (now.info.mode & 0004) == 0) {
    return out + "the content on the machine is not shown (not world-readable)\n" +
           ContentDiff("/dev/null", "b" + shown, "", content);
  }
  return out + ContentDiff("a" + shown, "b" + shown, now.content, content);
}

// What writing a file or directory that carries an ACL does to it.
constexpr const char* kAclDropped = "ACL → none (the mode is all the access)\n";

// A file the apply deletes, shown as FileDiff shows a file it writes over:
// what a credential held, or only its owner may read, is not shown.
std::string DeletedFile(const std::string& what, const std::string& shown, const Current& now,
                        bool secret) {
  std::string said = "deleted " + what + " " + core::Printable(shown);
  if (secret) return said + " (a credential: its content is not shown)\n";
  if (!now.unreadable.empty()) return said + ": " + core::Printable(now.unreadable) + "\n";
  if ((now.info.mode & 0004) == 0 && !now.content.empty()) {
    return said + " (not world-readable: its content is not shown)\n";
  }
  return "deleted " + what + "\n" + ContentDiff("a" + shown, "/dev/null", now.content, "");
}

std::string MetadataDiff(const Current& now, const Resource& r, const FilesSeen& seen) {
  if (now.info.type != FileType::kRegular) return "";
  std::string out;
  if (now.info.mode != (r.mode & 07777)) {
    out += "mode " + core::FormatMode(now.info.mode) + " → " + core::FormatMode(r.mode) + "\n";
  }
  // A file to be written was looked at closely: its owner is resolved.
  if (now.info.uid != seen.uid || now.info.gid != seen.gid) {
    out += "owner " + std::to_string(now.info.uid) + ":" + std::to_string(now.info.gid) + " → " +
           core::Printable(r.owner) + ":" + core::Printable(r.group) + " (" +
           std::to_string(seen.uid) + ":" + std::to_string(seen.gid) + ")\n";
  }
  if (seen.acl) out += kAclDropped;
  return out;
}

std::string TreeDiff(ports::FileSystem& root, const Resource& r, const BundlesById& bundles) {
  auto bundle = bundles.find(r.id);
  if (bundle == bundles.end() || bundle->second == nullptr) return "";
  auto scanned = root.ScanTree(r.path, /*hash_contents=*/true);
  if (!scanned) return "cannot look at " + r.path + ": " + scanned.error().message + "\n";
  std::map<std::string_view, const core::TreeEntry*> on_disk, declared;
  for (const core::TreeEntry& e : *scanned) on_disk.emplace(e.relpath, &e);
  for (const core::TreeEntry& e : *bundle->second) declared.emplace(e.relpath, &e);
  std::vector<std::string> lines;
  for (const auto& [path, want] : declared) {
    auto it = on_disk.find(path);
    if (it == on_disk.end()) {
      lines.push_back("added   " + core::Printable(path));
      continue;
    }
    const core::TreeEntry& have = *it->second;
    bool file = want->type == FileType::kRegular;
    if ((have.type == FileType::kRegular) != file ||
        (have.type == FileType::kDirectory) != (want->type == FileType::kDirectory)) {
      lines.push_back("changed " + core::Printable(path) + " (now " + TypeWord(have.type) + ")");
    } else if (file && have.content_sha256 != want->content_sha256) {
      lines.push_back("changed " + core::Printable(path) + " (content)");
    } else if ((have.info.mode & 07777) != (want->mode & 07777)) {
      lines.push_back("changed " + core::Printable(path) + " (mode " +
                      core::FormatMode(have.info.mode) + " → " + core::FormatMode(want->mode) +
                      ")");
    }
  }
  for (const auto& [path, have] : on_disk) {
    if (!declared.contains(path)) lines.push_back("removed " + core::Printable(path));
  }
  std::string out;
  for (size_t i = 0; i < lines.size() && i < kMaxListedMembers; ++i) out += lines[i] + "\n";
  if (lines.size() > kMaxListedMembers) {
    out += "… and " + std::to_string(lines.size() - kMaxListedMembers) + " more\n";
  }
  if (lines.empty()) out = "the tree's ownership or entries' metadata differ; unpacked again\n";
  return out;
}

std::string DirectoryDiff(ports::FileSystem& root, const Resource& r, const FilesSeen& seen) {
  auto info = root.Stat(r.path);
  if (!info) return "cannot look at " + r.path + ": " + info.error().message + "\n";
  if (info->type == FileType::kMissing) {
    return "new directory, mode " + core::FormatMode(r.mode) + ", owner " +
           core::Printable(r.owner) + ":" + core::Printable(r.group) + "\n";
  }
  std::string out;
  if (info->mode != (r.mode & 07777)) {
    out += "mode " + core::FormatMode(info->mode) + " → " + core::FormatMode(r.mode) + "\n";
  }
  if (info->uid != seen.uid || info->gid != seen.gid) {
    out += "owner " + std::to_string(info->uid) + ":" + std::to_string(info->gid) + " → " +
           core::Printable(r.owner) + ":" + core::Printable(r.group) + "\n";
  }
  if (info->access_acl) out += kAclDropped;
  return out;
}

std::string SymlinkDiff(ports::FileSystem& root, const Resource& r) {
  std::string want = core::Printable(r.target, 300);
  auto info = root.Stat(r.path);
  if (!info) return "cannot look at " + r.path + ": " + info.error().message + "\n";
  if (info->type == FileType::kMissing) return "new symlink → " + want + "\n";
  if (info->type != FileType::kSymlink) {
    return "now " + TypeWord(info->type) + ": replaced by a symlink → " + want + "\n";
  }
  auto target = root.ReadLink(r.path);
  return "target " + (target ? core::Printable(*target, 300) : std::string("(unreadable)")) +
         " → " + want + "\n";
}

std::string UnitFilePath(const HostDirs& dirs, const std::string& unit) {
  return dirs.units + "/" + unit;
}

}  // namespace

std::vector<std::string> Diffs(const DiffInputs& in, const ReconcilerPorts& ports) {
  std::vector<std::string> out;
  // Paths the record holds credentials at: a file declared there now, or a
  // credential turned into a file, never shows what the machine has.
  std::set<std::string_view> secret_paths;
  if (in.record != nullptr) {
    for (const auto& [id, e] : in.record->resources) {
      if (e.kind != core::KindName(core::Kind::kCredential)) continue;
      for (const core::WrittenPath& w : e.written) secret_paths.insert(w.path);
    }
  }
  const auto& resources = in.declaration->resources;
  for (size_t i = 0; i < resources.size(); ++i) {
    const Resource& r = resources[i];
    const Step& step = in.plan->steps[i];
    if (step.failed() || !step.changes()) continue;
    std::string block;
    if (step.write_files && r.IsTree()) {
      block += TreeDiff(*ports.root, r, *in.bundles);
    } else if (step.write_files && r.kind == core::Kind::kDirectory) {
      block += DirectoryDiff(*ports.root, r, in.seen->files[i]);
    } else if (step.write_files && r.kind == core::Kind::kSymlink) {
      block += SymlinkDiff(*ports.root, r);
    } else if (step.write_files) {
      Current now = Look(*ports.root, r.path);
      bool secret = r.kind == core::Kind::kCredential;
      block += MetadataDiff(now, r, in.seen->files[i]);
      block += FileDiff(now, r.path, r.content, r.mode, secret, step.old ? step.old->digest : "",
                        (*in.wants)[i], secret_paths.contains(r.path));
    }
    if (step.write_unit_file && r.unit().text.has_value()) {
      std::string shown = UnitFilePath(*in.dirs, r.unit().name);
      block += FileDiff(Look(*ports.units, "/" + r.unit().name), shown, *r.unit().text, 0644, false,
                        "", "");
    }
    for (const std::string& name : step.write_drop_ins) {
      std::string rel = r.unit().name + ".d/" + name;
      block += FileDiff(Look(*ports.units, "/" + rel), UnitFilePath(*in.dirs, rel),
                        r.unit().drop_ins.at(name), 0644, false, "", "");
    }
    for (const std::string& name : step.delete_drop_ins) {
      std::string rel = r.unit().name + ".d/" + name;
      block +=
          DeletedFile("drop-in", UnitFilePath(*in.dirs, rel), Look(*ports.units, "/" + rel), false);
    }
    if (!block.empty()) out.push_back(Header(r.id, core::KindName(r.kind)) + block);
  }
  for (const Removal& removal : in.plan->removals) {
    std::string block;
    bool secret = removal.entry.kind == "credential";
    for (const std::string& path : removal.delete_paths) {
      Current now = Look(*ports.root, path);
      if (now.info.type == FileType::kDirectory) {
        block += "deleted tree " + core::Printable(path) + "\n";
      } else {
        block += DeletedFile("file", path, now, secret || secret_paths.contains(path));
      }
    }
    if (removal.delete_unit_file) {
      std::string unit = removal.entry.unit().name;
      block += DeletedFile("unit file", UnitFilePath(*in.dirs, unit),
                           Look(*ports.units, "/" + unit), false);
    }
    if (!block.empty()) out.push_back(Header(removal.id, removal.entry.kind) + block);
  }
  return out;
}

}  // namespace mesh::reconcile
