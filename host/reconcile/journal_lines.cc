#include "host/reconcile/journal_lines.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/printable.h"
#include "host/core/unit_status.h"

namespace mesh::reconcile {

namespace {

// A unit systemd would not load (a setting it refuses; a unit file it
// could not read), as Act read it before asking for its job.
bool NotLoadable(const std::vector<Acted>& acts, size_t k) {
  return k < acts.size() && acts[k].state == Acted::State::kRefused && acts[k].before.has_value() &&
         (acts[k].before->load_state == "bad-setting" || acts[k].before->load_state == "error");
}

// The line itself, and each of its fields where one line holds many:
// compact JSON, a flow-style map, a query string or a DSN. A separator
// inside a quoted value splits it too: its parts are still the secret's.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields{line};
  if (line.find_first_of(",;&?{}[]") == std::string_view::npos) return fields;
  while (!line.empty()) {
    size_t end = line.find_first_of(",;&?{}[]");
    if (end != 0) fields.push_back(line.substr(0, end));
    if (end == std::string_view::npos) break;
    line.remove_prefix(end + 1);
  }
  return fields;
}

// `line` with every secret's content (its surrounding blanks and newlines
// trimmed), each of its lines of 8 bytes or more, and the value of each
// of its lines or of their fields (Fields) that is KEY=VALUE or KEY: VALUE
// (an env file, YAML, JSON: what a daemon echoes is the value, not the
// line) of 8 bytes or more,
// replaced by its name: the longest first, so that a secret holding
// another (a URL holding its user) is replaced whole before the shorter
// one could break it up. A secret under 4 bytes is not looked for (it
// would stand for every such run of letters).
std::string Redact(std::string line, const Secrets& secrets) {
  auto trimmed = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    return s;
  };
  std::vector<std::pair<std::string_view, std::string>> pieces;  // text, its name
  for (const auto& [id, content] : secrets) {
    std::string name = "[credential " + id + "]";
    if (std::string_view whole = trimmed(content); whole.size() >= 4)
      pieces.emplace_back(whole, name);
    std::string_view rest = content;
    while (!rest.empty()) {
      size_t end = rest.find('\n');
      std::string_view piece = trimmed(rest.substr(0, end));
      if (piece.size() >= 8) pieces.emplace_back(piece, name);
      for (std::string_view field : Fields(piece)) {
        size_t sep = field.find_first_of("=:");
        if (sep == std::string_view::npos) continue;
        std::string_view value = trimmed(field.substr(sep + 1));
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
            value.back() == value.front()) {
          value = value.substr(1, value.size() - 2);
        }
        if (value.size() >= 8) pieces.emplace_back(value, name);
      }
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [secret, name] : pieces) {
    for (size_t at = line.find(secret); at != std::string::npos;
         at = line.find(secret, at + name.size())) {
      line.replace(at, secret.size(), name);
    }
  }
  return line;
}

}  // namespace

void AddJournalLines(ports::UnitJournal* journal, const Secrets& secrets, const Plan& plan,
                     const std::vector<Acted>& acts,
                     const std::vector<std::optional<Confirmation>>& confirmed,
                     std::vector<core::ResourceOutcome>& outcomes) {
  if (journal == nullptr) return;
  for (size_t k = 0; k < plan.units.size(); ++k) {
    const UnitPlan& u = plan.units[k];
    if (u.index >= outcomes.size()) continue;
    core::ResourceOutcome& o = outcomes[u.index];
    if (o.outcome != core::Outcome::kFailed || !o.unit.has_value()) continue;
    const std::optional<Confirmation>* c = k < confirmed.size() ? &confirmed[k] : nullptr;
    // The runs that failed, the one that died first: the looks' when the
    // two looks failed the host's own action; else the run the plan found
    // failed. Not a healthy run's chatter beside a failure that is not its
    // own (a restart held back, a job systemd refused, an enable).
    std::vector<std::string> runs;
    if (NotLoadable(acts, k)) {
      auto got = journal->ManagerLines(o.unit->name, kJournalLines);
      core::UnitSnapshot& snap = *o.unit;
      if (!got) {
        snap.journal_note = "journal not readable: " + got.error().message;
      } else if (got->empty()) {
        snap.journal_note = "the journal holds no line of systemd's about this unit";
      }
      for (const std::string& line : got.value_or(std::vector<std::string>())) {
        snap.journal.push_back(core::Printable(Redact(line, secrets), kJournalLineBytes));
      }
      continue;
    }
    if (c != nullptr && c->has_value()) {
      if ((*c)->verdict.accepted) continue;
      runs.push_back((*c)->first_invocation);
      if ((*c)->last.invocation_id != (*c)->first_invocation) {
        runs.push_back((*c)->last.invocation_id);
      }
    } else if (core::FoundFailed(u.status) || !u.start_failed.empty()) {
      runs.push_back(u.status.invocation_id);
    } else {
      continue;
    }
    std::vector<std::string> lines;
    std::string error;
    bool read = false;
    for (const std::string& run : runs) {
      if (run.empty()) continue;
      read = true;
      auto got = journal->LastLines(run, kJournalLines);
      if (!got) {
        error = got.error().message;
        break;
      }
      for (std::string& line : *got) {
        lines.push_back(core::Printable(Redact(std::move(line), secrets), kJournalLineBytes));
      }
      if (!lines.empty()) break;  // the run that died first said why
    }
    if (!read) continue;  // no run known: nothing looked up, nothing said
    core::UnitSnapshot& snap = *o.unit;
    snap.journal = std::move(lines);
    if (!error.empty()) {
      snap.journal_note = "journal not readable: " + error;
    } else if (snap.journal.empty()) {
      snap.journal_note = "the journal holds no line of this run";
    }
  }
}

}  // namespace mesh::reconcile
