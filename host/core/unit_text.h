// What a unit's text (a unit file or drop-in the host writes) says, read
// the way the host's rules need it: a setting at a time, with its section.
// No full parser of systemd's syntax: continuation lines are joined,
// quoting and specifiers are not undone.
#pragma once

#include <functional>
#include <string_view>

namespace mesh::core {

// Calls `each(section, key, value)` for each `KEY=VALUE` setting of `text`,
// in order, each part trimmed of blanks ("[Install]" gives section
// "Install"), a setting continued over lines ending in a backslash
// joined with a space. Comments, blank lines and lines without "=" are skipped.
void ForEachSetting(
    std::string_view text,
    const std::function<void(std::string_view, std::string_view, std::string_view)>& each);

// Whether its [Install] section says what enabling the unit makes
// (WantedBy=, RequiredBy=, UpheldBy=, Alias=): without, systemd has
// nothing to enable.
bool InstallsAnything(std::string_view text);

// Whether what a unit runs, or needs to start, names `path` whole: a word
// of a command (Exec*=, but not ExecCondition=) or of a setting whose path
// the start needs (WorkingDirectory=, EnvironmentFile=, BindPaths=,
// LoadCredential=, StandardInput=file:, ...; not one made optional with
// "-"), or what one leads into (ExecStart=/opt/api/bin/serve, -/opt/api,
// PATH=/usr/bin:/opt/api/bin; not /opt/api-10), in [Service], [Socket],
// [Mount] or [Swap]. A condition on it (ConditionPathExists=,
// ExecCondition=) is no use of it: a file dropped to turn a unit off is
// what such a unit asks for. Heuristic: a path built by a shell ("cd
// /srv/x", "${DIR}/x") or escaped (\x20, %%) is not seen.
bool RunsFrom(std::string_view text, std::string_view path);

}  // namespace mesh::core
