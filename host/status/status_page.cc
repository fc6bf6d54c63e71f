#include "host/status/status_page.h"

#include <algorithm>
#include <map>
#include <vector>

#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::status {
namespace {

// What a person reads first is the verdict's colour and the failing rows;
// the rest is quiet. Inline, and allowed by its hash alone.
constexpr std::string_view kStyle =
    "body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#1b1f23;background:#f6f8fa}"
    "header{padding:14px 20px;color:#fff}header.good{background:#1a7f37}"
    "header.bad{background:#cf222e}h1{margin:0;font-size:22px}header p{margin:4px 0 0}"
    "header a{color:#fff}main{padding:4px 20px 20px}h2{font-size:17px;margin:18px 0 6px}"
    "ul.wrong{margin:0;padding-left:20px}ul.wrong li{margin:2px 0}"
    "table{border-collapse:collapse;background:#fff;width:100%}#summary table{width:auto}"
    "th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}"
    "th{background:#eaeef2}td.words{white-space:pre-wrap;word-break:break-word}"
    "tr.failing td{background:#ffebe9}dl{display:grid;grid-template-columns:max-content auto;"
    "gap:2px 14px;margin:0}dt{font-weight:600}dd{margin:0;word-break:break-all}"
    "code{font:13px ui-monospace,monospace}.badge{font-weight:700}"
    "tr.failing .badge{color:#cf222e}nav{margin:8px 0}footer{padding:8px 20px;color:#57606a}";

constexpr size_t kWordsLimit = 600;
constexpr size_t kJournalLimit = 240;
constexpr size_t kWrongLines = 20;

void Append(std::string& out, std::string_view a) { out.append(a); }

template <typename... Parts>
void Append(std::string& out, std::string_view a, Parts&&... rest) {
  out.append(a);
  Append(out, std::forward<Parts>(rest)...);
}

// Failing first, then the units, then the rest; each in declaration order.
std::vector<size_t> RowOrder(const Snapshot& s) {
  std::vector<size_t> order(s.resources.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&s](size_t i) {
    const core::ResourceOutcome& r = s.resources[i];
    return Failing(r) ? 0 : r.unit.has_value() ? 1 : 2;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&rank](size_t a, size_t b) { return rank(a) < rank(b); });
  return order;
}

std::string UnitWords(const core::UnitSnapshot& u) {
  std::string words = u.name;
  if (!u.active_state.empty()) words += ": " + u.active_state + " (" + u.sub_state + ")";
  if (!u.result.empty() && u.result != "success") words += ", Result=" + u.result;
  return words;
}

std::string Badge(const core::ResourceOutcome& r) {
  if (Failing(r)) return "failing";
  if (!r.unit.has_value()) return "ok";
  if (!r.unit_should_run()) return "as declared";
  return r.unit->up ? "up" : "not seen yet";
}

void Row(std::string& out, const core::ResourceOutcome& r) {
  Append(out, Failing(r) ? "<tr class=\"failing\">" : "<tr>", "<td class=\"badge\">",
         HtmlText(Badge(r)), "</td><td><code>", HtmlText(r.id, kWordsLimit), "</code></td><td>",
         HtmlText(r.kind), "</td><td>", HtmlText(core::OutcomeName(r.outcome)), "</td><td>");
  if (r.unit.has_value()) {
    Append(out, HtmlText(UnitWords(*r.unit), kWordsLimit), "</td><td>",
           std::to_string(r.unit->n_restarts), " by systemd, ",
           std::to_string(r.unit->host_restarts), " by the host");
  } else {
    Append(out, "</td><td>");
  }
  Append(out, "</td><td class=\"words\">", HtmlText(r.detail, kWordsLimit));
  // Beside a failed unit, what its run logged last: most often the daemon's
  // own reason. One line (its earlier ones are on /status): a page of 200
  // failing units stays within its bound.
  if (r.unit.has_value()) {
    if (!r.unit->journal.empty()) {
      Append(out, "<br><code>journal: ", HtmlText(r.unit->journal.back(), kJournalLimit),
             "</code>");
      if (r.unit->journal.size() > 1) {
        Append(out, " (", std::to_string(r.unit->journal.size() - 1),
               " earlier line(s): <a href=\"/status\">/status</a>)");
      }
    }
    if (!r.unit->journal_note.empty()) {
      Append(out, "<br><code>journal: ", HtmlText(r.unit->journal_note, kWordsLimit), "</code>");
    }
  }
  Append(out, "</td><td>", HtmlText(r.applied_at), "</td></tr>\n");
}

void Wrong(std::string& out, const Health& health) {
  if (health.healthy) return;
  std::vector<std::string_view> lines;
  std::string_view text = health.text;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  Append(out, "<section id=\"wrong\"><h2>What is wrong (", std::to_string(lines.size()),
         ")</h2><ul class=\"wrong\">\n");
  for (size_t i = 0; i < lines.size() && i < kWrongLines; ++i) {
    Append(out, "<li>", HtmlText(lines[i], kWordsLimit), "</li>\n");
  }
  if (lines.size() > kWrongLines) {
    Append(out, "<li>and ", std::to_string(lines.size() - kWrongLines),
           " more: every failing resource is at the top of the table below</li>\n");
  }
  Append(out, "</ul></section>\n");
}

void Item(std::string& out, std::string_view term, std::string_view html) {
  Append(out, "<dt>", term, "</dt><dd>", html, "</dd>\n");
}

void LastApply(std::string& out, const Snapshot& s) {
  Append(out, "<section id=\"apply\"><h2>Last apply</h2><dl>\n");
  if (!s.reconciled) {
    Item(out, "result", "none has finished yet");
  } else {
    Item(out, "result", HtmlText(s.result));
    Item(out, "finished", HtmlText(s.finished_at));
    char took[32];
    std::snprintf(took, sizeof took, "%.3f s", s.duration_seconds);
    Item(out, "took", took);
    std::string counts;
    for (const auto& [name, n] : s.counts) {
      if (n == 0) continue;
      if (!counts.empty()) counts += ", ";
      counts += std::to_string(n) + " " + name;
    }
    Item(out, "outcomes", counts.empty() ? "none" : HtmlText(counts));
  }
  if (s.error.has_value()) {
    Item(out, "refused",
         HtmlText(*s.error, 4 * kWordsLimit) + " (the generation below stays in force)");
  }
  if (s.apply_error.has_value()) Item(out, "error", HtmlText(*s.apply_error, 4 * kWordsLimit));
  if (s.stalled.has_value()) Item(out, "stalled", HtmlText(*s.stalled, kWordsLimit));
  if (s.units_unseen.has_value()) Item(out, "units unseen", HtmlText(*s.units_unseen, kWordsLimit));
  Item(out, "generation", std::to_string(s.generation));
  Item(out, "declaration", "<code>" + HtmlText(s.declaration_digest) + "</code>");
  if (s.signer.has_value()) {
    Item(out, "signed by",
         "key <code>" + HtmlText(s.signer->key_id) + "</code>, trusted comment \u201c" +
             HtmlText(s.signer->trusted_comment, kWordsLimit) + "\u201d");
  } else {
    Item(out, "signed by", "not checked (no --verify-key)");
  }
  Append(out, "</dl></section>\n");
}

// Counts by kind and outcome: the whole picture, whichever page is shown.
void Summary(std::string& out, const Snapshot& s) {
  std::map<std::string, std::map<core::Outcome, size_t>> by_kind;
  std::map<core::Outcome, bool> seen;
  size_t failing = 0;
  for (const core::ResourceOutcome& r : s.resources) {
    by_kind[r.kind][r.outcome]++;
    seen[r.outcome] = true;
    if (Failing(r)) ++failing;
  }
  Append(out, "<section id=\"summary\"><h2>Resources: ", std::to_string(s.resources.size()), ", ",
         std::to_string(failing), " failing</h2>\n");
  if (by_kind.empty()) {
    Append(out, "<p>None declared.</p></section>\n");
    return;
  }
  Append(out, "<table><tr><th>kind</th>");
  for (const auto& [o, _] : seen) Append(out, "<th>", core::OutcomeName(o), "</th>");
  Append(out, "</tr>\n");
  for (const auto& [kind, counts] : by_kind) {
    Append(out, "<tr><td>", HtmlText(kind), "</td>");
    for (const auto& [o, _] : seen) {
      auto it = counts.find(o);
      Append(out, "<td>", it == counts.end() ? "0" : std::to_string(it->second), "</td>");
    }
    Append(out, "</tr>\n");
  }
  Append(out, "</table></section>\n");
}

void Nav(std::string& out, size_t page, size_t pages) {
  if (pages <= 1) return;
  Append(out, "<nav>Page ", std::to_string(page), " of ", std::to_string(pages), ": ");
  if (page > 1) {
    Append(out, "<a href=\"/?page=1\">first</a> <a href=\"/?page=", std::to_string(page - 1),
           "\">previous</a> ");
  }
  if (page < pages) {
    Append(out, "<a href=\"/?page=", std::to_string(page + 1),
           "\">next</a> <a href=\"/?page=", std::to_string(pages), "\">last</a>");
  }
  Append(out, "</nav>\n");
}

void Table(std::string& out, const Snapshot& s, size_t page) {
  size_t pages = PageCount(s);
  std::vector<size_t> order = RowOrder(s);
  size_t begin = (page - 1) * kRowsPerPage;
  size_t end = std::min(order.size(), begin + kRowsPerPage);
  Append(out, "<section id=\"resources\"><h2>Resources, failing first");
  if (pages > 1) {
    Append(out, " (", std::to_string(begin + 1), " to ", std::to_string(end), " of ",
           std::to_string(order.size()), ")");
  }
  Append(out, "</h2>\n");
  Nav(out, page, pages);
  Append(out,
         "<table><tr><th></th><th>resource</th><th>kind</th><th>outcome</th><th>unit</th>"
         "<th>restarts</th><th>words</th><th>applied at</th></tr>\n");
  for (size_t i = begin; i < end; ++i) Row(out, s.resources[order[i]]);
  Append(out, "</table>\n");
  Nav(out, page, pages);
  Append(out, "</section>\n");
}

}  // namespace

std::string HtmlText(std::string_view text, size_t limit) {
  std::string printable = core::Printable(text, limit);
  std::string out;
  out.reserve(printable.size());
  for (char c : printable) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

size_t PageCount(const Snapshot& s) {
  return std::max<size_t>(1, (s.resources.size() + kRowsPerPage - 1) / kRowsPerPage);
}

const std::string& StatusPagePolicy() {
  static const std::string policy =
      "default-src 'none'; style-src 'sha256-" + core::Sha256Base64(kStyle) +
      "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  return policy;
}

core::Result<std::string> RenderStatusPage(const Snapshot& s, const PageContext& context) {
  size_t pages = PageCount(s);
  if (context.page < 1 || context.page > pages) {
    return core::Fail("no page " + std::to_string(context.page) + ": the pages are 1 to " +
                      std::to_string(pages));
  }
  Health health = Judge(s);
  std::string verdict = health.healthy ? "HEALTHY" : "NOT HEALTHY";
  std::string machine = s.machine.empty() ? "(no machine yet)" : HtmlText(s.machine);
  std::string out;
  out.reserve(16384 + 512 * std::min(s.resources.size(), kRowsPerPage));
  Append(out,
         "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>",
         verdict, " \u00b7 ", machine, " \u00b7 mesh-host</title><style>", kStyle,
         "</style></head>\n<body><header class=\"", health.healthy ? "good" : "bad",
         "\"><h1><span id=\"verdict\">", verdict, "</span> \u00b7 machine ", machine,
         ", generation ", std::to_string(s.generation),
         "</h1><p>mesh-host \u00b7 <a href=\"/status\">/status</a> (JSON) \u00b7 "
         "<a href=\"/healthz\">/healthz</a> \u00b7 <a href=\"/metrics\">/metrics</a></p>"
         "</header>\n<main>\n");
  Wrong(out, health);
  LastApply(out, s);
  Summary(out, s);
  Table(out, s, context.page);
  Append(out, "</main><footer>mesh-host ", HtmlText(context.version),
         ". This page is drawn from the picture /status serves; reload it to look again."
         "</footer></body></html>\n");
  return out;
}

}  // namespace mesh::status
