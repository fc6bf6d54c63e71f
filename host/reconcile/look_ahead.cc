#include "host/reconcile/look_ahead.h"

#include <algorithm>
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
    std::vector<std::string_view> paths;
    paths.reserve(record->resources.size());
    for (const auto& [id, e] : record->resources) {
      if (e.kind != core::KindName(core::Kind::kService) && !e.written.empty()) {
        paths.push_back(e.written[0].path);
      }
    }
    // By path: StatMany keeps a directory open for all its files.
    std::sort(paths.begin(), paths.end());
    paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
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
