#include "host/core/unit_text.h"

#include <algorithm>
#include <string>

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
  std::string joined;  // a setting continued over lines ending in "\"
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = Trimmed(text.substr(at, end - at));
    at = end + 1;
    if (joined.empty() && (line.starts_with('#') || line.starts_with(';'))) continue;
    if (!joined.empty() || line.ends_with('\\')) {
      if (!joined.empty() && (line.starts_with('#') || line.starts_with(';'))) continue;
      joined.append(line.ends_with('\\') ? line.substr(0, line.size() - 1) : line);
      joined += ' ';
      if (line.ends_with('\\') && at < text.size()) continue;
      line = Trimmed(joined);
    }
    if (line.starts_with('[') && line.ends_with(']')) {
      section = line.substr(1, line.size() - 2);
    } else if (size_t eq = line.find('='); eq != std::string_view::npos) {
      each(section, Trimmed(line.substr(0, eq)), Trimmed(line.substr(eq + 1)));
    }
    joined.clear();
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
  auto names = [&](std::string_view value) {
    for (size_t at = value.find(path); at != std::string_view::npos;
         at = value.find(path, at + 1)) {
      if ((at == 0 || bound(" \t=\"'-@+!:;(&|`", at - 1, value)) &&
          bound("/ \t\"';:&|)`", at + path.size(), value)) {
        return true;
      }
    }
    return false;
  };
  bool runs = false;
  ForEachSetting(text, [&](std::string_view section, std::string_view key, std::string_view value) {
    if (runs || path.empty()) return;
    // What systemd reads of [Unit] and [Install] starts nothing from a path.
    if (section != "Service" && section != "Socket" && section != "Mount" && section != "Swap") {
      return;
    }
    // A command, but not a condition: a flag file dropped to turn the unit
    // off (ExecCondition=/bin/test -e FLAG) is what the unit asks for.
    if (key.starts_with("Exec") && key != "ExecCondition") {
      runs = names(value);
      return;
    }
    // A path the start needs; "-" makes one optional.
    static constexpr std::string_view kNeeded[] = {
        "WorkingDirectory", "RootDirectory",     "RootImage",      "EnvironmentFile",
        "BindPaths",        "BindReadOnlyPaths", "LoadCredential", "LoadCredentialEncrypted",
        "StandardInput"};
    if (std::find(std::begin(kNeeded), std::end(kNeeded), key) != std::end(kNeeded) &&
        !value.starts_with('-')) {
      runs = names(value);
    }
  });
  return runs;
}

}  // namespace mesh::core
