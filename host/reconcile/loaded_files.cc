#include "host/reconcile/loaded_files.h"

#include "host/core/printable.h"

namespace mesh::reconcile {

std::optional<NotLoaded> LoadedFiles::NotTheHosts(
    std::string_view unit, const core::UnitStatus& status, bool own_file,
    const std::map<std::string, std::string>& drop_ins, bool after_reload,
    const std::function<bool(const std::string&)>& still_there) {
  if (dirs_ == nullptr || dirs_->units.empty() || services_ == nullptr ||
      status.load_state == "masked") {
    return std::nullopt;
  }
  std::string name(unit);
  if (own_file && after_reload && !status.need_daemon_reload) {
    if (auto alias = AliasWords(name, status, true)) return NotLoaded{.words = std::move(*alias)};
    if (status.load_state == "not-found") return NotSearched();
  }
  // The file systemd loads instead, what it is, and the unit file its
  // directory would hold (what the search order is judged by).
  std::string other, what, as_unit_file;
  bool drop_in = false;
  if (own_file && !core::LoadedFrom(status, dirs_->units, name) &&
      status.fragment_path.ends_with("/" + name)) {  // not a template's, nor a link's target
    other = as_unit_file = status.fragment_path;
    what = after_reload ? "it" : name;
  }
  for (auto it = drop_ins.begin(); other.empty() && it != drop_ins.end(); ++it) {
    other = core::DropInLoadedElsewhere(status, dirs_->units, name, it->first);
    if (other.empty()) continue;
    what = "its drop-in " + it->first;
    drop_in = true;
    as_unit_file = other.substr(0, other.size() - name.size() - 3 - it->first.size()) + "/" + name;
  }
  if (other.empty()) return std::nullopt;
  if (status.need_daemon_reload && still_there && !still_there(other)) return std::nullopt;
  const auto& search_path = SearchPath();
  std::string dir = core::Printable(dirs_->units);
  std::string loads = std::string(after_reload ? "after the daemon-reload " : "") +
                      "systemd loads " + what + " from " + core::Printable(other);
  if (!search_path) {
    return NotLoaded{.words = (after_reload ? "" : "not applied: ") + loads +
                              ", and whether it reads that before " + dir +
                              " (--unit-dir) is not known: its unit search path could not be "
                              "read (" +
                              core::Printable(search_path.error().message) + ")" +
                              (after_reload ? "" : "; the next apply asks again"),
                     .known = false};
  }
  if (!core::LoadedFromEarlierDirectory(as_unit_file, name, dirs_->units, *search_path)) {
    return std::nullopt;
  }
  std::string mend = "(move that file away, or set --unit-dir to its directory)";
  if (after_reload) {
    return NotLoaded{.words = "shadowed: " + loads + ", in a directory it reads before " + dir +
                              " (--unit-dir), not from the host's file " + mend};
  }
  return NotLoaded{.words = "shadowed: " + loads + ", in a directory it reads before " + dir +
                            " (--unit-dir): " + (drop_in ? "the drop-in" : "a unit file") +
                            " the host writes there would not run " + mend};
}

const core::Result<std::vector<std::string>>& LoadedFiles::SearchPath() {
  if (!search_path_.has_value()) search_path_ = services_->UnitSearchPath();
  return *search_path_;
}

std::optional<NotLoaded> LoadedFiles::NotSearched() {
  const auto& search_path = SearchPath();
  // Unknown (unread, or empty as no systemd's is), or --unit-dir among
  // them: StartUnit's own refusal says the rest.
  if (!search_path || search_path->empty()) return std::nullopt;
  std::string host_dir = core::SimpleDir(dirs_->units);
  for (const std::string& d : *search_path) {
    if (core::SimpleDir(d) == host_dir) return std::nullopt;
  }
  return NotLoaded{.words =
                       "not found: after the daemon-reload systemd has no unit file for it, "
                       "as it does not read " +
                       core::Printable(dirs_->units) +
                       " (--unit-dir): set --unit-dir to a directory of its unit search "
                       "path (systemd-analyze unit-paths lists them)"};
}

}  // namespace mesh::reconcile
