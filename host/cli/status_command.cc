#include "host/cli/status_command.h"

#include <fcntl.h>
#include <httplib.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "host/cli/fleet_table.h"
#include "host/cli/prometheus_status.h"
#include "host/core/outcome.h"
#include "host/core/printable.h"

namespace mesh::cli {
namespace {

// A file the operator names, read whole up to `limit` bytes: larger (or
// endless, as /dev/zero) is an error, not a process that grows until it
// is killed. A pipe (`<(pass show mesh)`, a FIFO) is read as its writer
// writes, until `deadline` (the command's --timeout): one nobody writes to
// is an error then, not a command that outlives its deadline.
constexpr size_t kMaxTargetsBytes = size_t{16} << 20;
constexpr size_t kMaxPasswordBytes = 4096;
core::Result<std::string> ReadAtMost(const std::string& path, size_t limit,
                                     std::chrono::steady_clock::time_point deadline) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return core::Fail(std::strerror(errno));
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  struct stat st;
  // A FIFO opened before its writer reads as ended: waited on until then.
  bool fifo = ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
  std::string text;
  char chunk[4096];
  for (;;) {
    ssize_t r = ::read(fd, chunk, sizeof(chunk));
    if (r > 0) {
      text.append(chunk, static_cast<size_t>(r));
      if (text.size() > limit) return core::Fail("larger than " + std::to_string(limit) + " bytes");
      continue;
    }
    if (r == 0 && (!fifo || !text.empty())) return text;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN) {
      return core::Fail(std::string("read error: ") + std::strerror(errno));
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return core::Fail(
          "nothing more to read before the deadline (--timeout): a pipe no one writes to");
    }
    if (r == 0) {
      // No writer yet, or one gone without a word: poll would answer at
      // once (a hang-up), so the FIFO is asked again at short steps.
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(20)));
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
  }
}

bool Healthy(const nlohmann::json& s) {
  const nlohmann::json* v = Member(s, "healthy");
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

// A detail whole, wrapped at spaces into lines of at most `width` (a word
// longer than that is cut there), at most `lines` of them: the part worth
// reading at 3 a.m. is not cut at the edge of the terminal.
std::vector<std::string> Wrap(const std::string& text, size_t width, size_t lines) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size() && out.size() < lines) {
    size_t len = std::min(width, text.size() - at);
    if (at + len < text.size()) {
      size_t space = text.rfind(' ', at + len);
      if (space != std::string::npos && space > at) {
        len = space - at;
      } else if (size_t cut = CharBoundary(text, at + len); cut > at) {
        len = cut - at;  // a word cut at the edge is cut between characters
      }
    }
    out.push_back(text.substr(at, len));
    at += len;
    while (at < text.size() && text[at] == ' ') ++at;
  }
  if (at < text.size() && !out.empty()) {
    std::string& last = out.back();
    if (last.size() + 4 > width) last.resize(CharBoundary(last, width - 4));
    last += " ...";
  }
  return out;
}

// `label` and `text` after `indent`, wrapped to 80 columns under a hanging
// indent, so that what continues a line reads as its continuation.
void AddWrapped(std::string& out, std::string_view indent, std::string_view label,
                const std::string& text, size_t lines = 64) {
  std::string hang(indent.size() + label.size(), ' ');
  if (text.empty()) {  // the label alone still says the field is there
    out +=
        std::string(indent) + std::string(label.substr(0, label.find_last_not_of(' ') + 1)) + "\n";
    return;
  }
  bool first = true;
  for (const std::string& part : Wrap(text, 80 - hang.size(), lines)) {
    out += (first ? std::string(indent) + std::string(label) : hang) + part + "\n";
    first = false;
  }
}

// Failed, or a unit declared running that is not up: what /healthz holds
// against the machine, first in the table as on the page.
bool Failed(const nlohmann::json& r) {
  if (Str(r, "outcome") == "failed") return true;
  const nlohmann::json* unit = Member(r, "unit");
  if (unit == nullptr || !unit->is_object()) return false;
  const nlohmann::json* up = Member(*unit, "up");
  return Str(*unit, "declared_state") == "running" && up != nullptr && up->is_boolean() &&
         !up->get<bool>();
}

// The most a host sends of one journal line: kJournalLineBytes of what the
// run wrote, each byte at most four once escaped, and the mark of a cut.
constexpr size_t kJournalLineSent = 4 * core::kJournalLineBytes + 3;

// A failed unit's journal lines, under its detail: at most five, each whole
// as a host sends it (kJournalLineBytes of the run's words, escaped),
// wrapped. Bounded all the same: the answer is another machine's, and may
// be hostile.
std::string JournalLines(const nlohmann::json& r) {
  const nlohmann::json* unit = Member(r, "unit");
  const nlohmann::json* journal =
      unit != nullptr && unit->is_object() ? Member(*unit, "journal") : nullptr;
  if (journal == nullptr || !journal->is_object()) return "";
  std::string out;
  const nlohmann::json* lines = Member(*journal, "lines");
  size_t shown = 0;
  if (lines != nullptr && lines->is_array()) {
    for (const nlohmann::json& line : *lines) {
      if (!line.is_string() || shown == core::kJournalLines) break;
      AddWrapped(out, "    ", "journal: ",
                 core::Printable(line.get_ref<const std::string&>(), kJournalLineSent));
      ++shown;
    }
  }
  const nlohmann::json* note = Member(*journal, "note");
  if (shown == 0 && note != nullptr && note->is_string()) {
    AddWrapped(out, "    ", "journal: ", "(" + Str(*journal, "note") + ")");
  }
  return out;
}

// Whose signature the applied generation carries (--verify-key): the key
// and its trusted comment, which says what the signer meant it to be.
std::string Signer(const nlohmann::json& s) {
  const nlohmann::json* sig = Member(s, "signature");
  if (sig == nullptr || !sig->is_object()) return "";
  std::string out;
  AddWrapped(out, "", "signed by key ", Str(*sig, "key_id"), 2);
  AddWrapped(out, "    ", "trusted comment: ", Str(*sig, "trusted_comment"), 3);
  return out;
}

std::string Seconds(const nlohmann::json& last) {
  const nlohmann::json* v = Member(last, "duration_seconds");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", v != nullptr && v->is_number() ? v->get<double>() : 0.0);
  return buf;
}

// The CA, client certificate and key, checked before any host is asked:
// the client reads them again by path for every connection and, when they
// cannot be used, sends nothing and names no file nor reason (every host
// then reads as unreachable).
constexpr size_t kMaxPemBytes = size_t{1} << 20;
core::Result<std::string> ReadPem(std::string_view flag, const std::string& path,
                                  const ClientOptions& client) {
  std::string named = std::string(flag) + " " + core::Printable(path) + ": ";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return core::Fail(named + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    return core::Fail(named + "not a regular file (it is read for every connection)");
  }
  auto text = ReadAtMost(path, kMaxPemBytes, *client.deadline);
  if (!text) return core::Fail(named + text.error().message);
  return text;
}

std::string CheckClientFiles(const ClientOptions& client) {
  if (!client.ca.empty()) {
    auto ca = ReadPem("--ca", client.ca, client);
    if (!ca) return ca.error().message;
    if (std::string why = CheckCaPem(*ca, client); !why.empty()) return why;
  }
  if (client.cert.empty()) return "";
  std::string pem[2];
  const std::pair<std::string_view, const std::string*> files[] = {{"--cert", &client.cert},
                                                                   {"--key", &client.key}};
  for (size_t i = 0; i < 2; ++i) {
    auto text = ReadPem(files[i].first, *files[i].second, client);
    if (!text) return text.error().message;
    pem[i] = std::move(*text);
  }
  std::string why = CheckClientPair(pem[0], pem[1], client);
  OPENSSL_cleanse(pem[1].data(), pem[1].size());
  return why;
}

}  // namespace

std::string FormatStatusTable(const nlohmann::json& s) {
  std::string out;
  static const nlohmann::json kNone;
  const nlohmann::json* last_member = Member(s, "last_reconcile");
  const nlohmann::json& last = last_member != nullptr ? *last_member : kNone;
  out += "machine " + Str(s, "machine") + "  generation " + Str(s, "generation") + "  " +
         (Healthy(s) ? "HEALTHY" : "NOT HEALTHY") + "\n";
  out += "last apply " +
         (!last.is_object() ? std::string("none yet")
                            : Str(last, "result") + " at " + Str(last, "finished_at") + " (" +
                                  Seconds(last) + ")") +
         "\n";
  // The last accepted apply's own error: after a refusal, the one before it.
  if (last.is_object() && Member(last, "error") != nullptr) {
    AddWrapped(
        out, "",
        Str(last, "result") == "refused" ? "the apply before failed: " : "last apply failed: ",
        Str(last, "error"), 6);
  }
  if (Member(s, "error") != nullptr)
    AddWrapped(out, "", "declaration refused: ", Str(s, "error"), 6);
  // What /healthz holds against the machine beyond its resources, whole.
  for (const auto& [key, said] : {std::pair{"apply_stalled", "apply stalled: "},
                                  std::pair{"units_unseen", "units unseen: "}}) {
    if (Member(s, key) == nullptr) continue;
    AddWrapped(out, "", said, Str(s, key), 4);
  }
  out += Signer(s);
  // Fixed columns fit 80; the detail follows on its own indented line,
  // because it is the part worth reading whole.
  out += Fit("RESOURCE", 22) + " " + Fit("KIND", 10) + " " + Fit("OUTCOME", 9) + " " +
         Fit("UNIT STATE", 18) + " RESTARTS\n";
  const nlohmann::json* resources = Member(s, "resources");
  const nlohmann::json& all =
      resources != nullptr && resources->is_array() ? *resources : nlohmann::json::array();
  // The failing first, each group in the host's order.
  std::vector<const nlohmann::json*> rows;
  for (bool failing : {true, false}) {
    for (const nlohmann::json& r : all) {
      if (Failed(r) == failing) rows.push_back(&r);
    }
  }
  for (const nlohmann::json* row : rows) {
    const nlohmann::json& r = *row;
    std::string state, restarts;
    if (const nlohmann::json* unit = Member(r, "unit"); unit != nullptr && unit->is_object()) {
      const nlohmann::json& u = *unit;
      // A unit the host could not read has null states (the bus lost).
      bool read = Member(u, "active_state") != nullptr;
      state = read ? Str(u, "active_state") + "/" + Str(u, "sub_state") : "not read";
      // Who restarted it: systemd on its own (Restart=), or the host.
      restarts =
          "systemd " + (read ? Str(u, "n_restarts") : "?") + ", host " + Str(u, "host_restarts");
    }
    std::string id = Str(r, "id");
    out += Fit(id, 22) + " " + Fit(Str(r, "kind"), 10) + " " + Fit(Str(r, "outcome"), 9) + " " +
           Fit(state, 18) + " " + Fit(restarts, 17) + "\n";
    // What its column cut (a long id; a crash loop's activating/auto-restart)
    // is said whole under it.
    if (id.size() > 22) AddWrapped(out, "    ", "id ", id, 4);
    if (state.size() > 18) AddWrapped(out, "    ", "unit state ", state, 2);
    for (const std::string& line : Wrap(Str(r, "detail"), 76, 12)) out += "    " + line + "\n";
    out += JournalLines(r);
  }
  // Trailing padding is noise in a terminal.
  std::string trimmed;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    std::string l = out.substr(start, end - start);
    l.erase(l.find_last_not_of(' ') + 1);
    trimmed += l + "\n";
    start = end + 1;
  }
  return trimmed;
}

namespace {

// What one host's /status said, or why it could not be read.
struct Probe : Answer {
  nlohmann::json doc;  // a mesh-host status document when `error` is empty
};

// The members every mesh-host's /status has (SPEC) that a fleet's row
// shows, each of its type: a `{"healthy": true}` from something else on
// that port is no healthy host.
// Why `doc` is no status document, in words; "" when it is one.
std::string NotAStatusDocument(const nlohmann::json& doc) {
  if (doc.is_discarded()) return "not JSON (or nested too deep, or of too many values)";
  if (!doc.is_object()) return "not a JSON object";
  if (!doc.contains("healthy") || !doc["healthy"].is_boolean()) {
    return "no \"healthy\" that is true or false";
  }
  if (!doc.contains("machine") || !doc["machine"].is_string()) return "no \"machine\" string";
  if (!doc.contains("generation") || !doc["generation"].is_number_unsigned()) {
    return "no \"generation\" that is a count";
  }
  return "";
}

// `whole`: the document as it is; else only what a fleet's row shows.
Probe FetchStatus(const std::string& given, const ClientOptions& opts, bool whole) {
  Probe p{Fetch(given, "/status", opts), {}};
  if (!p.error.empty()) return p;
  p.doc = whole ? ParseAnswer(p.body)
                : ParseAnswerMembers(p.body, {"healthy", "machine", "generation"});
  p.body = std::string();  // parsed: not held through what follows
  if (std::string why = NotAStatusDocument(p.doc); !why.empty()) {
    p.error = core::Printable(p.url) + "/status is not a mesh-host status document: " + why;
  }
  return p;
}

}  // namespace

int RunStatus(const std::string& given, std::ostream& out, std::ostream& err,
              const ClientOptions& client) {
  if (RefusesPlainHttp(given, client, err)) return 2;
  Probe p = FetchStatus(given, client, /*whole=*/true);
  if (!p.error.empty()) {
    err << "mesh-host: " << p.error << "\n";
    return 2;
  }
  out << FormatStatusTable(p.doc);
  return Healthy(p.doc) ? 0 : 1;
}

core::Result<std::vector<std::string>> ReadTargets(const std::string& path,
                                                   const std::string& default_scheme,
                                                   std::chrono::steady_clock::time_point deadline) {
  auto text = ReadAtMost(path, kMaxTargetsBytes, deadline);
  if (!text) return core::Fail("--targets " + path + ": " + text.error().message);
  auto fail = [&](const std::string& why) {
    return core::Fail("--targets " + path + ": " + why +
                      " (expected Prometheus file_sd JSON: [{\"targets\": [\"HOST:PORT\", ...], "
                      "\"labels\": {...}}, ...])");
  };
  nlohmann::json doc = ParseAnswer(*text);
  if (doc.is_discarded()) return fail("not JSON");
  if (!doc.is_array()) return fail("not a list of target groups");
  std::vector<std::string> urls;
  for (const nlohmann::json& group : doc) {
    if (!group.is_object() || !group.contains("targets") || !group["targets"].is_array()) {
      return fail("a group without a \"targets\" list");
    }
    std::string scheme = default_scheme;
    if (group.contains("labels")) {
      // As Prometheus reads file_sd: labels map names to strings, or the
      // file is refused (a __scheme__ of 1 was passed over, and the
      // target asked over the default scheme).
      const nlohmann::json& labels = group["labels"];
      if (!labels.is_object()) return fail("\"labels\" that is not an object");
      for (const auto& [name, value] : labels.items()) {
        if (!value.is_string()) return fail("a label whose value is not a string");
      }
      if (labels.contains("__scheme__")) {
        scheme = labels["__scheme__"].get<std::string>();
        if (scheme != "http" && scheme != "https") {
          return fail("a __scheme__ other than http or https");
        }
      }
    }
    for (const nlohmann::json& t : group["targets"]) {
      if (!t.is_string() || t.get_ref<const std::string&>().empty()) {
        return fail("a target that is not a \"HOST:PORT\" string");
      }
      // As Prometheus reads a target: HOST:PORT alone.
      const std::string& target = t.get_ref<const std::string&>();
      if (target.find("://") != std::string::npos) {
        return fail("target \"" + core::Printable(target, 80) +
                    "\" names a scheme: a target is HOST:PORT, its scheme the group's "
                    "\"__scheme__\" label");
      }
      if (target.find('/') != std::string::npos) {
        return fail("target \"" + core::Printable(target, 80) +
                    "\" has a path: a target is HOST:PORT (mesh-host status asks /status)");
      }
      urls.push_back(scheme + "://" + t.get<std::string>());
    }
  }
  if (urls.empty()) return fail("no targets");
  return urls;
}

FleetRow ProbeRow(const std::string& url, const ClientOptions& opts) {
  FleetRow row;
  Probe p = FetchStatus(url, opts, /*whole=*/false);
  if (!p.error.empty()) {
    row.health = "UNREACHABLE";
    row.machine = row.generation = "-";
    std::string why = p.error;
    if (auto colon = why.find(" unreachable: "); colon != std::string::npos) {
      why = why.substr(colon + 14);
    }
    row.what = why;
    return row;
  }
  row.machine = Str(p.doc, "machine");
  row.generation = Str(p.doc, "generation");
  // A host that never applied (its first declaration refused) names no
  // machine yet: a dash, as for a host not heard, not a blank column.
  if (row.machine.empty()) row.machine = "-";
  if (Healthy(p.doc)) {
    row.health = "healthy";
    row.healthy = true;
    return row;
  }
  row.health = "NOT HEALTHY";
  // /healthz names what is wrong, one line each: the first is shown, the
  // others counted (16 MiB of "a\n" kept as lines was some 256 MiB).
  Answer h = Fetch(url, "/healthz", opts);
  std::string first;
  size_t lines = 0;
  for (size_t at = 0; h.error.empty() && at < h.body.size();) {
    size_t end = h.body.find('\n', at);
    if (end == std::string::npos) end = h.body.size();
    if (end > at && lines++ == 0) {
      first = core::Printable(std::string_view(h.body).substr(at, end - at), 200);
    }
    at = end + 1;
  }
  row.what = !h.error.empty() ? "(/healthz not read: " + h.error + ")"
             : lines == 0     ? "(/healthz says nothing more)"
             : lines == 1     ? first
                              : first + " (+" + std::to_string(lines - 1) + " more)";
  return row;
}

int RunFleetStatus(const std::vector<std::string>& urls, std::ostream& out, std::ostream& err,
                   const ClientOptions& client) {
  for (const std::string& u : urls) {
    std::string base = BaseUrl(u);
    if (!base.starts_with("http://") && !base.starts_with("https://")) {
      err << "mesh-host: --url " << core::Printable(u)
          << ": not a URL; it takes http://HOST:PORT or https://HOST:PORT\n";
      return 2;
    }
  }
  // A target the client cannot take (a port past 65535, credentials in the
  // URL, an IPv6 address with letters) is the input's fault: said, and
  // exit 2, but the others are asked and shown all the same.
  std::vector<std::string> wrong(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) wrong[i] = CheckUrl(BaseUrl(urls[i]));
  // In parallel, each bounded by its timeouts: 200 machines, some down,
  // answer in seconds, not in 200 connect timeouts.
  std::vector<FleetRow> rows(urls.size());
  std::atomic<size_t> next{0};
  size_t workers = std::min<size_t>(urls.size(), 32);
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < urls.size();) {
        rows[i] = wrong[i].empty() ? ProbeRow(urls[i], client)
                                   : FleetRow{"-", "-", "UNREACHABLE", "not asked: " + wrong[i]};
      }
    });
  }
  for (std::thread& t : pool) t.join();
  std::vector<std::pair<std::string, FleetRow>> table;
  for (size_t i = 0; i < urls.size(); ++i) {
    std::string base = BaseUrl(urls[i]);
    std::string target = base.find('@') == std::string::npos ? base.substr(base.find("://") + 3)
                                                             : "(a URL with credentials)";
    table.emplace_back(std::move(target), std::move(rows[i]));
  }
  int rc = WriteFleetTable(table, out);
  for (size_t i = 0; i < urls.size(); ++i) {
    if (wrong[i].empty()) continue;
    bool secret = urls[i].find('@') != std::string::npos;
    err << "mesh-host: target " << i + 1 << " ("
        << (secret ? std::string("a URL with credentials") : core::Printable(table[i].first))
        << "): " << wrong[i] << "\n";
    rc = 2;
  }
  return rc;
}

int RunStatusVerb(const std::vector<std::string>& urls, const std::vector<std::string>& targets,
                  const std::string& default_url, std::ostream& out, std::ostream& err,
                  ClientOptions client, const std::string& password_file,
                  std::chrono::nanoseconds timeout, const std::string& prometheus) {
  client.deadline = std::chrono::steady_clock::now() + timeout;
  if (!password_file.empty()) {
    // Its first line; a FIFO is fine, an endless file (/dev/zero) is not.
    auto text = ReadAtMost(password_file, kMaxPasswordBytes, *client.deadline);
    if (!text) {
      err << "mesh-host: --password-file " << password_file << ": " << text.error().message << "\n";
      return 2;
    }
    client.password = text->substr(0, text->find('\n'));
  } else if (const char* env = std::getenv("MESH_HOST_PASSWORD"); env != nullptr) {
    client.password = env;
  }
  // Sent as it is, an empty password reads as a wrong one ("user prom and
  // that password are not accepted"), and a ':' in the name ends it there.
  if (!client.user.empty() && client.password.empty()) {
    err << "mesh-host: --user " << core::Printable(client.user) << " has no password: "
        << (password_file.empty()
                ? "give --password-file FILE or MESH_HOST_PASSWORD"
                : "--password-file " + core::Printable(password_file) + " has an empty first line")
        << "\n";
    return 2;
  }
  if (client.user.find(':') != std::string::npos) {
    err << "mesh-host: --user: a user name holds no ':' (basic auth ends the name there)\n";
    return 2;
  }
  if (std::string why = CheckClientFiles(client); !why.empty()) {
    err << "mesh-host: " << why << "\n";
    return 2;
  }
  if (!prometheus.empty()) return RunPrometheusStatus(prometheus, out, err, client);
  if (urls.size() <= 1 && targets.empty()) return RunStatus(default_url, out, err, client);
  for (const std::string& u : urls) {
    if (RefusesPlainHttp(u, client, err)) return 2;
  }
  std::vector<std::string> all = urls;
  for (const std::string& file : targets) {
    // A targets file rarely names the scheme (Prometheus keeps it on the
    // job): with credentials or a CA, the hosts are behind TLS.
    bool tls = !client.user.empty() || !client.ca.empty() || !client.cert.empty();
    auto more = ReadTargets(file, tls ? "https" : "http", *client.deadline);
    if (!more) {
      err << "mesh-host: " << core::Printable(more.error().message) << "\n";
      return 2;
    }
    all.insert(all.end(), more->begin(), more->end());
  }
  // A target named twice (two files of one site, a group repeated) is one
  // machine: asked once, one row, as Prometheus scrapes it once.
  std::set<std::string> seen;
  std::erase_if(all, [&](const std::string& u) { return !seen.insert(u).second; });
  return RunFleetStatus(all, out, err, client);
}

}  // namespace mesh::cli
