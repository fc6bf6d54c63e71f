#include "host/reconcile/plan_in_use.h"

#include <algorithm>

#include "host/core/unit_text.h"

namespace mesh::reconcile {
namespace {

// `target` of a link at `link`, absolute, in normal form (nothing on the
// machine is read).
std::string Resolved(const std::string& link, const std::string& target) {
  return NormalDirectory(target.starts_with('/') ? target
                                                 : link.substr(0, link.rfind('/') + 1) + target);
}

bool Under(std::string_view path, std::string_view dir) {
  return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

}  // namespace

UnitUses::UnitUses(const PlanInputs& in, const std::vector<Step>& steps)
    : declaration_(*in.declaration) {
  std::string root = in.dirs != nullptr ? in.dirs->root : "/";
  while (root.size() > 1 && root.ends_with('/')) root.pop_back();
  std::vector<std::string> paths;
  for (size_t j = 0; j < declaration_.resources.size(); ++j) {
    const core::Resource& r = declaration_.resources[j];
    paths.clear();
    if (r.kind == core::Kind::kSymlink) {
      links_.emplace_back(r.path, Resolved(r.path, r.target));
    } else if (r.HasUnit()) {
      if (r.unit().state == core::UnitState::kStopped && r.unit().enabled != true) continue;
      if (r.unit().text.has_value()) core::PathsUsed(*r.unit().text, paths);
      for (const auto& [name, text] : r.unit().drop_ins) core::PathsUsed(text, paths);
    } else if (r.IsFile() && j < steps.size() && steps[j].unit_definition) {
      core::PathsUsed(r.content, paths);
    }
    for (std::string& p : paths) {
      // Under --root, a unit names the path as the machine sees it.
      if (root != "/" && Under(p, root)) p.erase(0, root.size());
      used_.emplace_back(std::move(p), j);
    }
  }
  std::sort(used_.begin(), used_.end());
}

std::optional<std::string> UnitUses::UserOf(const std::string& name) const {
  for (auto it = std::lower_bound(used_.begin(), used_.end(), std::make_pair(name, size_t{0}));
       it != used_.end() && it->first.starts_with(name); ++it) {
    if (it->first != name && !Under(it->first, name)) continue;
    const core::Resource& r = declaration_.resources[it->second];
    return (r.HasUnit() ? r.unit().name : r.path) + " (" + r.id + ")";
  }
  return std::nullopt;
}

std::optional<std::string> UnitUses::Keeps(const std::vector<std::string>& paths) const {
  if (used_.empty()) return std::nullopt;
  for (const std::string& path : paths) {
    std::vector<std::string> names = {path};
    for (const auto& [link, target] : links_) {
      if (target == path || Under(target, path)) names.push_back(link);
      if (Under(path, target)) names.push_back(link + path.substr(target.size()));
    }
    for (const std::string& name : names) {
      if (auto user = UserOf(name)) {
        return "kept: " + path + " is still named by " + *user +
               ", which runs from it or needs it to start; removed once no declared unit "
               "names it";
      }
    }
  }
  return std::nullopt;
}

}  // namespace mesh::reconcile
