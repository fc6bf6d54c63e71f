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

bool Comment(std::string_view line) { return line.starts_with('#') || line.starts_with(';'); }

// The settings whose path a start needs (a missing one fails it), unless
// made optional with "-".
constexpr std::string_view kNeeded[] = {
    "BindPaths",      "BindReadOnlyPaths",       "EnvironmentFile",
    "LoadCredential", "LoadCredentialEncrypted", "RootDirectory",
    "RootImage",      "StandardInput",           "WorkingDirectory"};

}  // namespace

void ForEachSetting(
    std::string_view text,
    const std::function<void(std::string_view, std::string_view, std::string_view)>& each) {
  std::string_view section;
  auto take = [&](std::string_view line) {
    if (line.starts_with('[') && line.ends_with(']')) {
      section = line.substr(1, line.size() - 2);
    } else if (size_t eq = line.find('='); eq != std::string_view::npos) {
      each(section, Trimmed(line.substr(0, eq)), Trimmed(line.substr(eq + 1)));
    }
  };
  std::string joined;  // a setting continued over lines ending in "\"
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = Trimmed(text.substr(at, end - at));
    at = end + 1;
    bool continued = line.ends_with('\\');
    if (Comment(line) || (joined.empty() && !continued)) {
      if (!Comment(line)) take(line);
      continue;
    }
    joined.append(continued ? line.substr(0, line.size() - 1) : line);
    joined += ' ';
    if (continued) continue;
    take(Trimmed(joined));
    joined.clear();
  }
  if (!joined.empty()) take(Trimmed(joined));
}

bool InstallsAnything(std::string_view text) {
  bool installs = false;
  ForEachSetting(text, [&](std::string_view section, std::string_view key, std::string_view) {
    installs = installs || (section == "Install" && (key == "WantedBy" || key == "RequiredBy" ||
                                                     key == "UpheldBy" || key == "Alias"));
  });
  return installs;
}

void PathsUsed(std::string_view text, std::vector<std::string>& out) {
  ForEachSetting(text, [&](std::string_view section, std::string_view key, std::string_view value) {
    // What systemd reads of [Unit] and [Install] starts nothing from a path.
    if (section != "Service" && section != "Socket" && section != "Mount" && section != "Swap") {
      return;
    }
    // A command, but not a condition: a flag file dropped to turn the unit
    // off (ExecCondition=/bin/test -e FLAG) is what the unit asks for.
    const bool command = key.starts_with("Exec") && key != "ExecCondition";
    if (!command && std::find(std::begin(kNeeded), std::end(kNeeded), key) == std::end(kNeeded)) {
      return;
    }
    // Words, and what each leads into (PATH=/usr/bin:/opt/api/bin,
    // "cd /srv/x&&...", -/opt/api).
    constexpr std::string_view kBetween = " \t\"'=:;&|()`";
    for (size_t at = 0; at < value.size();) {
      size_t end = std::min(value.find_first_of(kBetween, at), value.size());
      std::string_view word = value.substr(at, end - at);
      at = end + 1;
      // "-" makes a needed path optional; before a command, it only says
      // its failure is ignored.
      if (!command && word.starts_with('-')) continue;
      word.remove_prefix(std::min(word.find_first_not_of("-@+!"), word.size()));
      while (word.size() > 1 && word.ends_with('/')) word.remove_suffix(1);
      if (word.starts_with('/')) out.emplace_back(word);
    }
  });
}

}  // namespace mesh::core
