#include "host/reconcile/plan_in_use.h"

#include <algorithm>

#include "host/core/unit_text.h"

namespace mesh::reconcile {

std::optional<std::string> UsedByADeclaredUnit(const PlanInputs& in, const std::vector<Step>& steps,
                                               const std::vector<std::string>& paths) {
  const core::Declaration& d = *in.declaration;
  for (const std::string& path : paths) {
    std::vector<std::string> names = {path};
    for (const core::Resource& link : d.resources) {
      if (link.kind != core::Kind::kSymlink || link.target.find("..") != std::string::npos) {
        continue;
      }
      std::string to = link.target.starts_with('/')
                           ? link.target
                           : link.path.substr(0, link.path.rfind('/') + 1) + link.target;
      if (to == path || to.starts_with(path + "/")) names.push_back(link.path);
    }
    if (in.dirs != nullptr && in.dirs->root != "/") {
      for (size_t k = 0, n = names.size(); k < n; ++k) names.push_back(in.dirs->root + names[k]);
    }
    auto uses = [&](std::string_view text) {
      return std::any_of(names.begin(), names.end(),
                         [&](const std::string& name) { return core::RunsFrom(text, name); });
    };
    for (size_t j = 0; j < d.resources.size(); ++j) {
      const core::Resource& r = d.resources[j];
      std::string user;
      if (r.HasUnit()) {
        bool named = r.unit().text.has_value() && uses(*r.unit().text);
        for (const auto& [name, text] : r.unit().drop_ins) named = named || uses(text);
        if (named) user = r.unit().name;
      } else if (r.IsFile() && j < steps.size() && steps[j].unit_definition && uses(r.content)) {
        user = r.path;
      }
      if (!user.empty()) {
        return "kept: " + path + " is still named by " + user + " (" + r.id +
               "), which runs from it or needs it to start; removed once no declared unit "
               "names it";
      }
    }
  }
  return std::nullopt;
}

}  // namespace mesh::reconcile
