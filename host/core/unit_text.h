// What a unit's text (a unit file or drop-in the host writes) says, read
// the way the host's rules need it: a setting at a time, with its section.
// No full parser of systemd's syntax: continuation lines and quoting are
// not joined or undone, which the rules below do not need.
#pragma once

#include <functional>
#include <string_view>

namespace mesh::core {

// Calls `each(section, key, value)` for each `KEY=VALUE` line of `text`, in
// order, each part trimmed of blanks ("[Install]" gives section "Install").
// Comments, blank lines and lines without "=" are skipped.
void ForEachSetting(
    std::string_view text,
    const std::function<void(std::string_view, std::string_view, std::string_view)>& each);

// Whether its [Install] section says what enabling the unit makes
// (WantedBy=, RequiredBy=, UpheldBy=, Alias=): without, systemd has
// nothing to enable.
bool InstallsAnything(std::string_view text);

// Whether a command (Exec*=), WorkingDirectory= or an EnvironmentFile=
// that must be there (no "-") names `path` whole: a
// word of it, or what one leads into (ExecStart=/opt/api/bin/serve,
// -/opt/api, PATH=/usr/bin:/opt/api/bin; not /opt/api-10). A condition on
// it (ConditionPathExists=) is no use of it: a file dropped to turn a unit
// off is what such a unit asks for.
bool RunsFrom(std::string_view text, std::string_view path);

}  // namespace mesh::core
