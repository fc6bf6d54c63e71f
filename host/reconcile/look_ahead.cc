#include "host/reconcile/look_ahead.h"

#include <algorithm>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace mesh::reconcile {

void LookAhead::Start(ports::Background* background, ports::FileSystem* root,
                      std::shared_ptr<const core::Record> record) {
  if (background == nullptr || job_ != nullptr || record->resources.size() < kWorthAt) return;
  // The record is read-only during the pass, and held here by the job; the
  // root is not used by the pass until the look ahead was taken.
  job_ = background->Start([this, root, record = std::move(record)] {
    // Grouped by directory, each path after its directory's hash:
    // StatMany keeps a directory open for all its files, and no path is
    // compared with another (two directories of one hash only cost a
    // directory opened again; a path recorded twice is looked at twice).
    std::vector<std::pair<size_t, std::string_view>> by_dir;
    by_dir.reserve(record->resources.size());
    for (const auto& [id, e] : record->resources) {
      if (e.kind != core::KindName(core::Kind::kService) && !e.written.empty()) {
        std::string_view path = e.written[0].path;
        by_dir.emplace_back(std::hash<std::string_view>()(path.substr(0, path.rfind('/'))), path);
      }
    }
    std::sort(by_dir.begin(), by_dir.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string_view> paths;
    paths.reserve(by_dir.size());
    for (const auto& [hash, path] : by_dir) paths.push_back(path);
    std::vector<core::Result<core::FileInfo>> infos = root->StatMany(paths);
    // Keyed by the record's own strings, which the cache then holds.
    stats_.stats.reserve(paths.size());
    for (size_t i = 0; i < paths.size() && i < infos.size(); ++i) {
      stats_.AddOwned(paths[i], std::move(infos[i]));
    }
    stats_.owner = record;
  });
}

std::optional<StatCache> LookAhead::Take() {
  if (job_ == nullptr) return std::nullopt;
  bool ok = job_->Wait();
  job_.reset();
  StatCache taken = std::move(stats_);
  stats_ = StatCache();
  if (!ok) return std::nullopt;
  return taken;
}

}  // namespace mesh::reconcile
