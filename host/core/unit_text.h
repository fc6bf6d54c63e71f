// What a unit's text (a unit file or drop-in the host writes) says, read
// the way the host's rules need it: a setting at a time, with its section.
// No full parser of systemd's syntax: continuation lines are joined,
// quoting and specifiers are not undone.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

// The absolute paths what the unit runs, or needs to start, names, into
// `out`: each word of a command (Exec*=, but not ExecCondition=), or of a
// setting whose path a start needs (WorkingDirectory=, EnvironmentFile=,
// BindPaths=, LoadCredential=, StandardInput=file:, ...; not one made
// optional with "-"), split where a path ends (PATH=/usr/bin:/opt/api/bin
// gives /usr/bin and /opt/api/bin; "cd /srv/x&&./go" gives /srv/x), in
// [Service], [Socket], [Mount] or [Swap]. A condition on a path
// (ConditionPathExists=, ExecCondition=) is no use of it: a file dropped
// to turn a unit off is what such a unit asks for. Read as written: a path
// a shell builds ("${DIR}/x") or an escaped one (\x20, %%) is not seen.
void PathsUsed(std::string_view text, std::vector<std::string>& out);

}  // namespace mesh::core
