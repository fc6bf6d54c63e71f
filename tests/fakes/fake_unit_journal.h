// FakeUnitJournal: ports::UnitJournal over lines a test gives each run
// (InvocationID), or `any_run` for every run it gave none (a test cannot
// always know the InvocationID a start will get); `unreadable` makes every
// read fail.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "host/ports/unit_journal.h"

namespace mesh::fakes {

class FakeUnitJournal : public ports::UnitJournal {
 public:
  void Log(const std::string& invocation_id, std::string line) {
    lines_[invocation_id].push_back(std::move(line));
  }

  core::Result<std::vector<std::string>> LastLines(std::string_view invocation_id,
                                                   size_t lines) override {
    reads_.emplace_back(invocation_id);
    if (!unreadable.empty()) return core::Fail(unreadable);
    auto it = lines_.find(std::string(invocation_id));
    const std::vector<std::string>& all = it == lines_.end() ? any_run : it->second;
    size_t from = all.size() > lines ? all.size() - lines : 0;
    return std::vector<std::string>(all.begin() + static_cast<std::ptrdiff_t>(from), all.end());
  }

  // What the service manager logged of a unit.
  void LogManager(const std::string& unit, std::string line) {
    manager_[unit].push_back(std::move(line));
  }
  core::Result<std::vector<std::string>> ManagerLines(std::string_view unit,
                                                      size_t lines) override {
    reads_.push_back("manager:" + std::string(unit));
    if (!unreadable.empty()) return core::Fail(unreadable);
    auto it = manager_.find(std::string(unit));
    if (it == manager_.end()) return std::vector<std::string>();
    // As the port says: back from the newest, up to the first line met again.
    std::vector<std::string> out;
    for (auto line = it->second.rbegin(); line != it->second.rend() && out.size() < lines; ++line) {
      if (std::find(out.begin(), out.end(), *line) != out.end()) break;
      out.push_back(*line);
    }
    return std::vector<std::string>(out.rbegin(), out.rend());
  }

  const std::vector<std::string>& reads() const { return reads_; }
  std::string unreadable;
  std::vector<std::string> any_run;

 private:
  std::map<std::string, std::vector<std::string>> lines_;
  std::map<std::string, std::vector<std::string>> manager_;
  std::vector<std::string> reads_;
};

}  // namespace mesh::fakes
