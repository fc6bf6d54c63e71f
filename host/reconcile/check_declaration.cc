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

// `in` lies inside `dir` (not the same).
bool Inside(std::string_view in, std::string_view dir) {
  return in.size() > dir.size() && in.starts_with(dir) && (dir == "/" || in[dir.size()] == '/');
}

// One is the other, or inside it.
bool Overlap(std::string_view a, std::string_view b) {
  return a == b || Inside(a, b) || Inside(b, a);
}

// The host's own places named one way (as given, or resolved), each with
// the words that name it.
struct Places {
  std::string root;  // "" for "/"
  std::string units, state, artifacts, declaration, verify_key;
  std::vector<std::string> links;      // on the way to the declaration (resolved only)
  std::vector<std::string> key_links;  // on the way to the verify key (resolved only)
};

// A place's words: its flag as given, and where it leads when resolved
// elsewhere.
std::string Named(std::string_view flag, const std::string& given, const std::string& at) {
  return std::string(flag) + " " + given + (at == given ? "" : ", which is " + at) + ")";
}

// A declared directory that the way to the declaration, or to the verify
// key, enters, declared so that users other than root could change it:
// they could then choose what the host applies next, and the host refuses
// to read a declaration or key so placed (FileDeclaration), so it could not
// apply the declaration that mends it. "" when `r` is no such directory.
std::string LoosensTheWay(const Resource& r, const std::string& real, const Places& p,
                          const Places& given) {
  if (r.kind != core::Kind::kDirectory) return "";
  std::string field, how;
  if (r.owner != "root" && r.owner != "0") {
    field = "owner";
    how = "\"" + r.owner + "\" would own " + real + ", ";
  } else if ((r.mode & 022) != 0 && (r.mode & 01000) == 0) {
    field = "mode";
    how = "\"" + core::FormatMode(r.mode) + "\" lets users other than root change " + real + ", ";
  } else {
    return "";
  }
  auto on_the_way = [&](const std::string& to, const std::vector<std::string>& links) {
    return (!to.empty() && Inside(to, real)) ||
           std::any_of(links.begin(), links.end(),
                       [&](const std::string& link) { return Inside(link, real); });
  };
  std::string what;
  // A signed declaration is read wherever it lies (signature.h): its way
  // is no one's to keep.
  if (p.verify_key.empty() && on_the_way(p.declaration, p.links)) {
    what = "the declaration (" + Named("--declaration", given.declaration, p.declaration);
  } else if (on_the_way(p.verify_key, p.key_links)) {
    what = "the verify key (" + Named("--verify-key", given.verify_key, p.verify_key);
  } else {
    return "";
  }
  return "resource " + r.id + ", field " + field + ": " + how + "a directory on the way to " +
         what + ", which the host then refuses to read: only root may own it, and only its " +
         "owner write to it (or set the sticky bit)";
}

// Whether `r`, landing at `real`, writes over the file `place`: as that
// file, or as a tree unpacked over its directory (a `directory` changes no
// bytes of it).
bool WritesOver(const Resource& r, const std::string& real, const std::string& place) {
  return !place.empty() && (real == place || (r.IsTree() && Overlap(real, place)));
}

// What of the verify key's `r` at `real` overlaps: the key, a link on its
// way, or the declaration's signature; "" when nothing.
std::string KeyOverlap(const Resource& r, const std::string& real, const Places& p,
                       const Places& given) {
  if (WritesOver(r, real, p.verify_key)) {
    return "the verify key (" + Named("--verify-key", given.verify_key, p.verify_key);
  }
  for (const std::string& link : p.key_links) {
    if (WritesOver(r, real, link)) {
      return "a link on the way to the verify key (--verify-key " + given.verify_key +
             ", through " + link + ")";
    }
  }
  if (!given.declaration.empty() && WritesOver(r, real, given.declaration + ".minisig")) {
    return "the declaration's signature (" + given.declaration + ".minisig)";
  }
  return "";
}

// Each resource's overlap with `p`, said in `refused` where none is said
// yet. `given`: the places as the flags named them, for the words.
void CheckPlacesAt(const core::Declaration& decl, const Places& p, const Places& given,
                   std::map<size_t, std::string>& refused) {
  // What unit_text and drop_ins write, by real path: what writes it.
  std::map<std::string, std::string> unit_files;
  if (!p.units.empty()) {
    for (const Resource& r : decl.resources) {
      if (r.unit().text.has_value()) {
        unit_files.emplace(p.units + "/" + r.unit().name,
                           "the unit file that resource " + r.id + "'s unit_text writes");
      }
      for (const auto& [name, text] : r.unit().drop_ins) {
        unit_files.emplace(p.units + "/" + r.unit().name + ".d/" + name,
                           "a drop-in of resource " + r.id + "'s drop_ins");
      }
    }
  }
  const std::pair<const std::string*, std::string> own[] = {
      {&p.state, "the host's state directory (" + Named("--state-dir", given.state, p.state)},
      {&p.artifacts,
       "the artifacts directory (" + Named("--artifacts", given.artifacts, p.artifacts)},
  };
  for (size_t i = 0; i < decl.resources.size(); ++i) {
    const Resource& r = decl.resources[i];
    if (!r.HasFiles() || refused.contains(i)) continue;
    std::string real = p.root + r.path;
    std::string what;
    for (const auto& [dir, name] : own) {
      if (what.empty() && !dir->empty() && Overlap(real, *dir)) what = name;
    }
    // The declaration itself: a file written over it, or a tree unpacked
    // over its directory, replaces what the next apply reads.
    if (what.empty() && WritesOver(r, real, p.declaration)) {
      what = "the declaration itself (" + Named("--declaration", given.declaration, p.declaration);
    }
    // A link on its way: anything put there re-points the next read.
    for (const std::string& link : p.links) {
      if (what.empty() && WritesOver(r, real, link)) {
        what = "a link on the way to the declaration (--declaration " + given.declaration +
               ", through " + link + ")";
      }
    }
    // The key every declaration must be signed with, and the signature the
    // next apply reads: written by a declaration, the host would trust or
    // refuse what that declaration chose (and a key another user could
    // change, it refuses at its next start).
    if (what.empty() && !p.verify_key.empty()) {
      what = KeyOverlap(r, real, p, given);
    }
    if (what.empty() && !p.units.empty()) {
      if (r.IsTree() && Overlap(real, p.units)) {
        what = "the unit directory (" + Named("--unit-dir", given.units, p.units);
      } else if (auto it = unit_files.find(real); it != unit_files.end()) {
        what = it->second;
      }
    }
    if (!what.empty()) {
      refused[i] =
          "resource " + r.id + ", field path: \"" + r.path + "\" (" + real + ") overlaps " + what;
    } else if (std::string loose = LoosensTheWay(r, real, p, given); !loose.empty()) {
      refused[i] = std::move(loose);
    }
  }
}

Places PlacesOf(std::string_view root, std::string_view units, std::string_view state,
                std::string_view artifacts, std::string_view declaration,
                std::string_view verify_key) {
  Places p{NormalDirectory(root),      NormalDirectory(units),       NormalDirectory(state),
           NormalDirectory(artifacts), NormalDirectory(declaration), NormalDirectory(verify_key)};
  if (p.root == "/") p.root.clear();
  return p;
}

// Each resource whose path overlaps the host's own places, once: as the
// flags name them, then as they resolve.
void CheckPlaces(const core::Declaration& decl, const HostDirs& dirs, core::Problems& problems) {
  const Places given = PlacesOf(dirs.root, dirs.units, dirs.state, dirs.artifacts, dirs.declaration,
                                dirs.verify_key);
  std::map<size_t, std::string> refused;  // by resource: few, if any
  CheckPlacesAt(decl, given, given, refused);
  const HostDirs::Resolved& rd = dirs.resolved;
  Places resolved =
      PlacesOf(rd.root.empty() ? dirs.root : rd.root, rd.units.empty() ? dirs.units : rd.units,
               rd.state.empty() ? dirs.state : rd.state,
               rd.artifacts.empty() ? dirs.artifacts : rd.artifacts,
               rd.declaration.empty() ? dirs.declaration : rd.declaration,
               rd.verify_key.empty() ? dirs.verify_key : rd.verify_key);
  for (const std::string& link : rd.declaration_links) {
    resolved.links.push_back(NormalDirectory(link));
  }
  for (const std::string& link : rd.verify_key_links) {
    resolved.key_links.push_back(NormalDirectory(link));
  }
  if (resolved.root != given.root || resolved.units != given.units ||
      resolved.state != given.state || resolved.artifacts != given.artifacts ||
      resolved.declaration != given.declaration || resolved.verify_key != given.verify_key ||
      !resolved.links.empty() || !resolved.key_links.empty()) {
    CheckPlacesAt(decl, resolved, given, refused);
  }
  for (auto& [i, words] : refused) problems.Add(std::move(words));
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
