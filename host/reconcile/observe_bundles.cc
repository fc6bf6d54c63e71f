#include "host/core/sha256.h"
#include "host/core/want.h"
#include "host/reconcile/observer.h"

namespace mesh::reconcile {

namespace {

// Why the artifacts directory did not give `source`, in its own words: the
// adapter names the file by its path inside that directory ("open /x:",
// "read /x:"), which reads as a file at the machine's root, and a link it
// refuses to follow as "Too many levels of symbolic links".
std::string WhyNotRead(const std::string& source, std::string why) {
  for (std::string_view verb : {"open /", "read /"}) {
    if (std::string prefix = std::string(verb) + source + ": "; why.starts_with(prefix)) {
      why.erase(0, prefix.size());
    }
  }
  if (why == "Too many levels of symbolic links") {
    return "it is a symbolic link, which --artifacts does not follow (copy the file in)";
  }
  return why;
}

}  // namespace

core::Result<std::string> ReadArtifact(ports::FileSystem& artifacts, const core::Resource& r) {
  std::string where = "resource " + r.id + ", field ";
  auto bytes = artifacts.ReadFile("/" + r.source, kMaxBundleBytes);
  if (!bytes) {
    return core::Fail(where + "source: cannot read " + r.source +
                      " from the artifacts directory (--artifacts): " +
                      WhyNotRead(r.source, bytes.error().message) +
                      "; put the file there under that name, or correct \"source\"");
  }
  std::string actual = core::Sha256Hex(*bytes);
  if (actual != r.sha256) {
    return core::Fail(where + "sha256: source " + r.source + " has sha256 " + actual +
                      ", the declaration says " + r.sha256);
  }
  return bytes;
}

core::Result<std::string> ReadBundle(const ReconcilerPorts& ports, const core::Resource& r,
                                     bool use_kept) {
  auto bytes = ReadArtifact(*ports.artifacts, r);
  if (bytes || !use_kept || ports.records == nullptr) return bytes;
  auto kept = ports.records->KeptArtifact(r.sha256);
  if (kept && core::Sha256Hex(*kept) == r.sha256) return kept;
  return core::Fail(bytes.error().message + "; nor the copy kept with the last good: " +
                    (kept ? std::string("not those bytes") : kept.error().message));
}

core::Result<std::vector<core::TreeEntry>> UnpackBundle(ports::ArchiveReader& archives,
                                                        const core::Resource& r,
                                                        std::string_view bytes, uint64_t others) {
  std::string where = "resource " + r.id + ", field source: ";
  using observe_internal::kMaxHeldBundleBytes;
  auto entries = archives.Read(bytes, kMaxHeldBundleBytes - others);
  if (!entries) {
    std::string also = others == 0 ? ""
                                   : " (what the declaration's other bundles leave of the " +
                                         std::to_string(kMaxHeldBundleBytes) +
                                         " bytes all of them may expand to)";
    return core::Fail(where + entries.error().message + also);
  }
  auto checked = core::CheckBundleEntries(std::move(*entries));
  if (!checked) {
    return core::Fail(where + "bundle " + r.source + " refused: " + checked.error().message);
  }
  return checked;
}

}  // namespace mesh::reconcile

namespace mesh::reconcile::observe_internal {

// A bundle the record already holds at this digest was checked when it was
// applied; only new or changed bundles are read here, so a no-op apply does
// not re-hash every bundle. One that cannot be used refuses the declaration,
// each such bundle named, as validate names them.
core::Status Observer::LoadChangedBundles() {
  core::Problems problems;
  for (size_t i = 0; i < decl_.resources.size(); ++i) {
    const Resource& r = decl_.resources[i];
    if (!r.IsTree()) continue;
    const RecordEntry* old = olds_[i];
    if (old != nullptr && old->digest == wants_[i]) continue;
    auto bundle = LoadBundle(r);
    if (!bundle) {
      problems.Add(bundle.error().message);
      continue;
    }
    out_.bundles.emplace(r.id, std::move(*bundle));
  }
  if (!problems.empty()) return std::unexpected(problems.ToError());
  return core::Ok();
}

Result<std::shared_ptr<const std::vector<TreeEntry>>> Observer::LoadBundle(const Resource& r) {
  auto key = std::make_pair(r.source, r.sha256);
  if (auto it = by_source_.find(key); it != by_source_.end()) return it->second;
  auto bytes = ReadBundle(ports_, r, kept_bundles_ != nullptr && kept_bundles_->contains(r.sha256));
  if (!bytes) return std::unexpected(bytes.error());
  auto checked = UnpackBundle(*ports_.archives, r, *bytes, held_bytes_);
  if (!checked) return std::unexpected(checked.error());
  for (const TreeEntry& e : *checked) held_bytes_ += e.content.size();
  core::HashContents(*checked);
  auto held = std::make_shared<const std::vector<TreeEntry>>(std::move(*checked));
  by_source_.emplace(std::move(key), held);
  return held;
}

Result<const std::vector<TreeEntry>*> Observer::Bundle(const Resource& r) {
  auto it = out_.bundles.find(r.id);
  if (it == out_.bundles.end()) {
    auto loaded = LoadBundle(r);
    if (!loaded) return std::unexpected(loaded.error());
    it = out_.bundles.emplace(r.id, std::move(*loaded)).first;
  }
  return it->second.get();
}

}  // namespace mesh::reconcile::observe_internal
