// LoadedFiles: whether systemd loads a unit, or one of its declared
// drop-ins, from a file the host did not write — a file of the same name in
// a directory it reads before --unit-dir, or a link that makes the name an
// alias of another unit — or from none at all, after a daemon-reload, when
// --unit-dir is not a directory systemd reads. Of two files of one name
// systemd loads the earlier directory's (its Manager.UnitPath order), so
// what the host writes there would not run. One rule for the observation (before
// anything is written), Act (after the apply's own daemon-reload) and the
// second look.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/result.h"
#include "host/core/unit_status.h"
#include "host/ports/service_manager.h"
#include "host/reconcile/plan.h"

namespace mesh::reconcile {

// Why a unit does not run the host's file, in the words of a failed
// outcome. `known` false: systemd's search path could not be read, so the
// words say it is not known whether that file comes first.
struct NotLoaded {
  std::string words;
  bool known = true;
};

class LoadedFiles {
 public:
  // `dirs` null or without --unit-dir, or no `services`: nothing is judged.
  LoadedFiles(const HostDirs* dirs, ports::ServiceManager* services)
      : dirs_(dirs), services_(services) {}

  // Why `unit`, as `status` shows it, does not run the host's file — its
  // unit file when `own_file` (the host writes unit_text), or one of
  // `drop_ins` — in the words of a failed outcome; nullopt when it does, or
  // when where it loads from is not for the host to judge (a masked unit, a
  // template's file). A name systemd reads as an alias of another unit is
  // judged here only `after_reload` (the host's file then read, if systemd
  // reads it first): before, a later directory's alias link may give way to
  // the host's file once written (the plan judges it, AliasJudged).
  // `after_reload`: the words say the
  // apply's own daemon-reload showed it. `still_there`, for a view systemd
  // says is stale (NeedDaemonReload): whether the file it names is still
  // there (a file moved away since is not loaded again); null: the view is
  // trusted. systemd's search path is read at the first unit that needs it.
  std::optional<NotLoaded> NotTheHosts(
      std::string_view unit, const core::UnitStatus& status, bool own_file,
      const std::map<std::string, std::string>& drop_ins, bool after_reload,
      const std::function<bool(const std::string&)>& still_there = nullptr);

 private:
  // The host's file of a unit systemd finds nowhere after reloading:
  // --unit-dir is not in its search path (the words say so), or nullopt.
  std::optional<NotLoaded> NotSearched();
  // systemd's search path, read at the first unit that needs it.
  const core::Result<std::vector<std::string>>& SearchPath();

  const HostDirs* dirs_;
  ports::ServiceManager* services_;
  std::optional<core::Result<std::vector<std::string>>> search_path_;
};

}  // namespace mesh::reconcile
