// CheckDeclaration (plan.h): what refuses a declaration before anything is
// looked at but the record and the host's own places.
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/unit_text.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

using core::Resource;

namespace {

// One is the other, or inside it.
bool Overlap(std::string_view a, std::string_view b) {
  auto inside = [](std::string_view in, std::string_view dir) {
    return in.size() > dir.size() && in.starts_with(dir) && (dir == "/" || in[dir.size()] == '/');
  };
  return a == b || inside(a, b) || inside(b, a);
}

// Each resource whose path overlaps the host's own places, once.
void CheckPlaces(const core::Declaration& decl, const HostDirs& dirs, core::Problems& problems) {
  std::string root = NormalDirectory(dirs.root);
  if (root == "/") root.clear();
  std::string units = NormalDirectory(dirs.units);
  std::string declaration = NormalDirectory(dirs.declaration);
  // What unit_text and drop_ins write, by real path: what writes it.
  std::map<std::string, std::string> unit_files;
  if (!units.empty()) {
    for (const Resource& r : decl.resources) {
      if (r.unit().text.has_value()) {
        unit_files.emplace(units + "/" + r.unit().name,
                           "the unit file that resource " + r.id + "'s unit_text writes");
      }
      for (const auto& [name, text] : r.unit().drop_ins) {
        unit_files.emplace(units + "/" + r.unit().name + ".d/" + name,
                           "a drop-in of resource " + r.id + "'s drop_ins");
      }
    }
  }
  const std::pair<std::string, std::string_view> own[] = {
      {NormalDirectory(dirs.state), "the host's state directory (--state-dir "},
      {NormalDirectory(dirs.artifacts), "the artifacts directory (--artifacts "},
  };
  for (const Resource& r : decl.resources) {
    if (!r.HasFiles()) continue;
    std::string real = root + r.path;
    std::string what;
    for (const auto& [dir, name] : own) {
      if (what.empty() && !dir.empty() && Overlap(real, dir)) what = std::string(name) + dir + ")";
    }
    // The declaration itself: a file written over it, or a tree unpacked
    // over its directory, replaces what the next apply reads.
    if (what.empty() && !declaration.empty() &&
        (real == declaration || (r.IsTree() && Overlap(real, declaration)))) {
      what = "the declaration itself (--declaration " + declaration + ")";
    }
    if (what.empty() && !units.empty()) {
      if (r.IsTree() && Overlap(real, units)) {
        what = "the unit directory (--unit-dir " + units + ")";
      } else if (auto it = unit_files.find(real); it != unit_files.end()) {
        what = it->second;
      }
    }
    if (!what.empty()) {
      problems.Add("resource " + r.id + ", field path: \"" + r.path + "\" (" + real +
                   ") overlaps " + what);
    }
  }
}

}  // namespace

std::string NormalDirectory(std::string_view path) {
  if (path.empty()) return "";  // not given: nothing to compare with
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (std::string_view part : parts) out.append("/").append(part);
  return out.empty() ? "/" : out;
}

void CheckDeclaration(const core::Declaration& decl, const core::Record& record, bool had_record,
                      std::string_view machine, const HostDirs& dirs, core::Problems& problems) {
  if (!machine.empty() && decl.machine != machine) {
    problems.Add("declaration, field machine: \"" + decl.machine + "\" is not this machine (\"" +
                 std::string(machine) + "\")");
  }
  if (had_record && decl.generation < record.generation) {
    problems.Add("declaration, field generation: " + std::to_string(decl.generation) +
                 " is lower than the applied generation " + std::to_string(record.generation));
  }
  CheckPlaces(decl, dirs, problems);
}

bool DeclaresInstall(const core::Resource& r) {
  return (r.unit().text.has_value() && core::InstallsAnything(*r.unit().text)) ||
         std::any_of(r.unit().drop_ins.begin(), r.unit().drop_ins.end(),
                     [](const auto& d) { return core::InstallsAnything(d.second); });
}

std::vector<std::string> NothingToEnable(const core::Declaration& declaration) {
  std::vector<std::string> out;
  for (const core::Resource& r : declaration.resources) {
    if (!r.HasUnit() || r.unit().enabled != true || !r.unit().text.has_value() ||
        DeclaresInstall(r)) {
      continue;
    }
    out.push_back("resource " + r.id +
                  ": enabled: true, but its unit_text has no [Install] "
                  "section with WantedBy=, RequiredBy=, UpheldBy= or Alias=: apply fails to "
                  "enable " +
                  r.unit().name + " unless systemd has it enabled already");
  }
  return out;
}

}  // namespace mesh::reconcile
