// UnitJournal: what one run of a unit logged, read from the journal by that
// run's InvocationID, so that a failed verdict can show the daemon's own
// complaint beside systemd's Result=; and what systemd itself logged of a
// unit, which is the only place a unit it will not load is said why.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/result.h"

namespace mesh::ports {

class UnitJournal {
 public:
  virtual ~UnitJournal() = default;

  // The last `lines` messages (at most) that the processes of the run
  // `invocation_id` logged, oldest first, as they were written (the caller
  // bounds and escapes them); when they logged none, what the service
  // manager logged of that run at warning or worse (why its command never
  // ran), but for the lines that restate its Result. Empty: the journal
  // holds neither. An error: the journal could not be opened or read.
  virtual core::Result<std::vector<std::string>> LastLines(std::string_view invocation_id,
                                                           size_t lines) = 0;

  // What the service manager (PID 1) logged about `unit` at warning or worse
  // at its last load, this boot: for a unit it refuses to load
  // (BadUnitSetting), the setting and why. At most `lines` messages, oldest
  // first, each once (systemd says them again at every load: reading back
  // stops at the first one met again). Same errors as LastLines.
  virtual core::Result<std::vector<std::string>> ManagerLines(std::string_view unit,
                                                              size_t lines) = 0;
};

}  // namespace mesh::ports
