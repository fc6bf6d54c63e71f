// SdJournal: ports::UnitJournal over libsystemd's sd-journal, loaded like
// sd-bus on first use (host/base/shared_library.h), so a machine without
// libsystemd still runs every verb that needs no systemd.
#pragma once

#include <string>

#include "host/ports/unit_journal.h"

namespace mesh::adapters {

class SdJournal : public ports::UnitJournal {
 public:
  // `directory`: a journal directory to read (--journal-dir: a container's,
  // /proc/PID/root/run/log/journal); empty: this machine's system journal.
  explicit SdJournal(std::string directory = "") : directory_(std::move(directory)) {}

  core::Result<std::vector<std::string>> LastLines(std::string_view invocation_id,
                                                   size_t lines) override;
  core::Result<std::vector<std::string>> ManagerLines(std::string_view unit, size_t lines) override;

 private:
  // The last `lines` MESSAGEs of the entries that match `matches`
  // ("FIELD=value": different fields all, one field's values any), oldest
  // first. `until_repeat`: read back only to the first message met again
  // (what was said at an earlier load of the same unit). Entries whose
  // MESSAGE_ID is one of `skip` are passed over.
  core::Result<std::vector<std::string>> Tail(const std::vector<std::string>& matches, size_t lines,
                                              bool until_repeat = false,
                                              const std::vector<std::string_view>& skip = {});

  std::string directory_;
};

}  // namespace mesh::adapters
