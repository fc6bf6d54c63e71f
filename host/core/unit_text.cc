#include "host/core/unit_text.h"

#include <algorithm>

namespace mesh::core {
namespace {

std::string_view Trimmed(std::string_view s) {
  constexpr std::string_view kBlanks = " \t\r";
  s.remove_prefix(std::min(s.find_first_not_of(kBlanks), s.size()));
  size_t last = s.find_last_not_of(kBlanks);
  return last == std::string_view::npos ? std::string_view() : s.substr(0, last + 1);
}

}  // namespace

void ForEachSetting(
    std::string_view text,
    const std::function<void(std::string_view, std::string_view, std::string_view)>& each) {
  std::string_view section;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = Trimmed(text.substr(at, end - at));
    at = end + 1;
    if (line.starts_with('[') && line.ends_with(']')) {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || line.starts_with('#') || line.starts_with(';')) continue;
    each(section, Trimmed(line.substr(0, eq)), Trimmed(line.substr(eq + 1)));
  }
}

bool InstallsAnything(std::string_view text) {
  bool installs = false;
  ForEachSetting(text, [&](std::string_view section, std::string_view key, std::string_view) {
    installs = installs || (section == "Install" && (key == "WantedBy" || key == "RequiredBy" ||
                                                     key == "UpheldBy" || key == "Alias"));
  });
  return installs;
}

bool RunsFrom(std::string_view text, std::string_view path) {
  auto bound = [](std::string_view set, size_t at, std::string_view v) {
    return at >= v.size() || set.find(v[at]) != std::string_view::npos;
  };
  bool runs = false;
  ForEachSetting(text, [&](std::string_view, std::string_view key, std::string_view value) {
    // An EnvironmentFile= with "-" may be missing; one without fails the start.
    const bool uses = key.starts_with("Exec") || key == "WorkingDirectory" ||
                      (key == "EnvironmentFile" && !value.starts_with('-'));
    if (runs || path.empty() || !uses) return;
    for (size_t at = value.find(path); at != std::string_view::npos && !runs;
         at = value.find(path, at + 1)) {
      runs = (at == 0 || bound(" \t=\"'-@+!:", at - 1, value)) &&
             bound("/ \t\"';:", at + path.size(), value);
    }
  });
  return runs;
}

}  // namespace mesh::core
