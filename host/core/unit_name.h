// Which unit files and drop-in directories systemd reads as part of a
// unit's definition, by name: one rule, for the plan's "its definition
// changed" and for prune's "a definition of it was removed".
#pragma once

#include <string>
#include <string_view>

namespace mesh::core {

// Whether the files of `defines` — a unit file's name, or a drop-in
// directory's name less ".d" — are part of `unit`'s definition: the unit's
// own; its template's, for an instance (foo@.service for foo@bar.service,
// and foo@.service.d/); the drop-ins of each dash prefix of its name
// (foo-.service.d/ for foo-bar.service); and those of its type
// (service.d/), as systemd 246 and later read them.
inline bool PartOfDefinition(std::string_view defines, std::string_view unit) {
  if (defines == unit) return true;
  size_t dot = unit.rfind('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  std::string_view type = unit.substr(dot);  // ".service"
  std::string_view stem = unit.substr(0, dot);
  if (defines == type.substr(1)) return true;
  auto is = [&](std::string_view head) {
    return defines.size() == head.size() + type.size() && defines.starts_with(head) &&
           defines.ends_with(type);
  };
  if (size_t at = stem.find('@'); at != std::string_view::npos && is(stem.substr(0, at + 1))) {
    return true;
  }
  for (size_t dash = stem.find('-'); dash != std::string_view::npos;
       dash = stem.find('-', dash + 1)) {
    if (is(stem.substr(0, dash + 1))) return true;
  }
  return false;
}

// Whether the unit file named `file` is what `unit` is loaded from: its
// own, or its template's for an instance (foo@.service for foo@bar.service).
// Deleting it leaves the unit without a definition; a drop-in directory of
// PartOfDefinition only changes one.
inline bool UnitFileOf(std::string_view file, std::string_view unit) {
  if (file == unit) return true;
  size_t at = unit.find('@');
  size_t dot = unit.rfind('.');
  return at != std::string_view::npos && dot != std::string_view::npos && at < dot &&
         file.size() == at + 1 + (unit.size() - dot) && file.starts_with(unit.substr(0, at + 1)) &&
         file.ends_with(unit.substr(dot));
}

}  // namespace mesh::core
