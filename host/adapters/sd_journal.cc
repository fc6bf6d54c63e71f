#include "host/adapters/sd_journal.h"

#include <systemd/sd-journal.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "host/base/shared_library.h"

namespace mesh::adapters {
namespace {

constexpr size_t kMostMessageBytes = 64 << 10;

// As in sdbus_service_manager.cc: each sd-journal function is a pointer of
// the header's name and type, bound when the library is first loaded.
#define MESH_SD_JOURNAL_FUNCTIONS(X) \
  X(sd_journal_open)                 \
  X(sd_journal_open_directory)       \
  X(sd_journal_add_match)            \
  X(sd_journal_seek_tail)            \
  X(sd_journal_previous)             \
  X(sd_journal_get_data)             \
  X(sd_journal_close)
// NOLINTNEXTLINE(bugprone-macro-parentheses): a declaration, not an expression
#define MESH_SD_JOURNAL_POINTER(fn) decltype(&::fn) fn = nullptr;
MESH_SD_JOURNAL_FUNCTIONS(MESH_SD_JOURNAL_POINTER)
#undef MESH_SD_JOURNAL_POINTER

core::Status LoadSdJournal() {
  static base::LoadOnce once;
  return once([]() -> core::Status {
    auto lib = base::SharedLibrary::Open("libsystemd.so.0");
    if (!lib) return std::unexpected(lib.error());
#define MESH_SD_JOURNAL_BIND(fn) \
  if (auto st = lib->Bind(#fn, fn); !st) return st;
    MESH_SD_JOURNAL_FUNCTIONS(MESH_SD_JOURNAL_BIND)
#undef MESH_SD_JOURNAL_BIND
    return core::Ok();
  });
}
#undef MESH_SD_JOURNAL_FUNCTIONS

std::string Errno(int r) { return std::strerror(r < 0 ? -r : r); }

// This boot's ID as the journal writes it (32 hex digits); empty when the
// kernel does not say. A container's journal shares it.
std::string BootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  return id.size() == 32 ? id : "";
}

// Closes the journal on every path out.
struct Journal {
  sd_journal* j = nullptr;
  ~Journal() {
    if (j != nullptr) sd_journal_close(j);
  }
};

}  // namespace

core::Result<std::vector<std::string>> SdJournal::LastLines(std::string_view invocation_id,
                                                            size_t lines) {
  // The run's own processes (their stdout, stderr and syslog), not what
  // systemd said of it: the daemon's complaint, which Result= does not say.
  auto own = Tail({"_SYSTEMD_INVOCATION_ID=" + std::string(invocation_id)}, lines);
  if (!own || !own->empty()) return own;
  // None: its command never ran or never spoke (an EnvironmentFile= that is
  // not there, a start that timed out). Then what systemd logged of that
  // run at warning or worse, but for the lines that only restate its
  // Result ("Failed with result 'exit-code'", "Failed to start …").
  constexpr std::string_view kUnitFailureResult = "d9b373ed55a64feb8242e02dbe79a49c";
  constexpr std::string_view kUnitFailed = "be02cf6855d2428ba40df7e9d022f03d";
  std::vector<std::string> matches = {"_PID=1", "INVOCATION_ID=" + std::string(invocation_id)};
  for (int priority = 0; priority <= 4; ++priority) {
    matches.push_back("PRIORITY=" + std::to_string(priority));
  }
  return Tail(matches, lines, /*until_repeat=*/false, {kUnitFailureResult, kUnitFailed});
}

core::Result<std::vector<std::string>> SdJournal::ManagerLines(std::string_view unit,
                                                               size_t lines) {
  // What the service manager itself logged with the unit's name, at warning
  // or worse (not its "Started" and "Stopped"), in this boot: a persistent
  // journal holds earlier boots' loads too. Read back to the previous load.
  std::vector<std::string> matches = {"_PID=1", "UNIT=" + std::string(unit)};
  for (int priority = 0; priority <= 4; ++priority) {
    matches.push_back("PRIORITY=" + std::to_string(priority));
  }
  if (std::string boot = BootId(); !boot.empty()) matches.push_back("_BOOT_ID=" + boot);
  return Tail(matches, lines, /*until_repeat=*/true);
}

core::Result<std::vector<std::string>> SdJournal::Tail(const std::vector<std::string>& matches,
                                                       size_t lines, bool until_repeat,
                                                       const std::vector<std::string_view>& skip) {
  if (auto st = LoadSdJournal(); !st) return std::unexpected(st.error());
  Journal journal;
  int r = directory_.empty()
              ? sd_journal_open(&journal.j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM)
              : sd_journal_open_directory(&journal.j, directory_.c_str(), 0);
  if (r < 0) {
    return core::Fail("cannot open the journal" +
                      (directory_.empty() ? std::string() : " in " + directory_) + ": " + Errno(r));
  }
  for (const std::string& match : matches) {
    if ((r = sd_journal_add_match(journal.j, match.data(), match.size())) < 0) {
      return core::Fail("cannot read the journal: " + Errno(r));
    }
  }
  if ((r = sd_journal_seek_tail(journal.j)) < 0) {
    return core::Fail("cannot read the journal: " + Errno(r));
  }
  std::vector<std::string> out;
  while (out.size() < lines && (r = sd_journal_previous(journal.j)) > 0) {
    const void* data = nullptr;
    size_t length = 0;
    if (!skip.empty() && sd_journal_get_data(journal.j, "MESSAGE_ID", &data, &length) >= 0) {
      std::string_view id(static_cast<const char*>(data), length);
      if (id.starts_with("MESSAGE_ID=")) id.remove_prefix(11);
      if (std::find(skip.begin(), skip.end(), id) != skip.end()) continue;
    }
    if (sd_journal_get_data(journal.j, "MESSAGE", &data, &length) < 0) continue;
    constexpr std::string_view kField = "MESSAGE=";
    std::string_view field(static_cast<const char*>(data), length);
    if (field.starts_with(kField)) field.remove_prefix(kField.size());
    // An uncompressed field comes back whole (a container's journal may
    // hold one of any size): what is kept is bounded. 64 KiB, not the 240
    // bytes shown, so that a secret in it is whole when it is redacted.
    field = field.substr(0, kMostMessageBytes);
    if (until_repeat && std::find(out.begin(), out.end(), field) != out.end()) break;
    out.emplace_back(field);
  }
  if (r < 0) return core::Fail("cannot read the journal: " + Errno(r));
  return std::vector<std::string>(out.rbegin(), out.rend());
}

}  // namespace mesh::adapters
