#include "host/cli/status_command.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "host/core/printable.h"
#include "third_party/tls_digests.h"

namespace mesh::cli {
namespace {

std::string Fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s + std::string(width - s.size(), ' ');
  return s.substr(0, width - 1) + "~";
}

// The document comes from the network: any member may be missing or of
// another type, and what it says reaches a terminal.
const nlohmann::json* Member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string Str(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = Member(j, key);
  if (v == nullptr) return "";
  if (v->is_string()) return core::Printable(v->get_ref<const std::string&>(), 300);
  return core::Printable(v->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 300);
}

bool Healthy(const nlohmann::json& s) {
  const nlohmann::json* v = Member(s, "healthy");
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::string Seconds(const nlohmann::json& last) {
  const nlohmann::json* v = Member(last, "duration_seconds");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", v != nullptr && v->is_number() ? v->get<double>() : 0.0);
  return buf;
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
  if (Member(s, "error") != nullptr) out += "declaration refused: " + Str(s, "error") + "\n";
  // Fixed columns fit 80; the detail follows on its own indented line,
  // because it is the part worth reading whole.
  out += Fit("RESOURCE", 22) + " " + Fit("KIND", 10) + " " + Fit("OUTCOME", 9) + " " +
         Fit("UNIT STATE", 18) + " RESTARTS sd/host\n";
  const nlohmann::json* resources = Member(s, "resources");
  for (const nlohmann::json& r :
       resources != nullptr && resources->is_array() ? *resources : nlohmann::json::array()) {
    std::string state, restarts;
    if (const nlohmann::json* unit = Member(r, "unit"); unit != nullptr && unit->is_object()) {
      const nlohmann::json& u = *unit;
      state = Str(u, "active_state") + "/" + Str(u, "sub_state");
      restarts = Str(u, "n_restarts") + "/" + Str(u, "host_restarts");
    }
    out += Fit(Str(r, "id"), 22) + " " + Fit(Str(r, "kind"), 10) + " " + Fit(Str(r, "outcome"), 9) +
           " " + Fit(state, 18) + " " + restarts + "\n";
    std::string detail = Str(r, "detail");
    if (!detail.empty()) out += "    " + Fit(detail, 76) + "\n";
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
struct Probe {
  std::string url;     // normalised base URL
  std::string error;   // empty: `doc` is a mesh-host status document
  bool usage = false;  // the URL itself is wrong (not a host that is down)
  nlohmann::json doc;
};

// The host's base URL: a trailing "/" or the path of /status itself (what
// one copies from a browser) means the same host.
std::string BaseUrl(const std::string& given) {
  std::string url = given;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/status")) url.resize(url.size() - std::string_view("/status").size());
  return url;
}

std::string Why(httplib::Error error) {
  return error == httplib::Error::Connection
             ? "nothing answers there (is `mesh-host run` listening on that address and port?)"
         : error == httplib::Error::Read ? "it accepted the connection but sent no answer in time"
                                         : httplib::to_string(error);
}

Probe Get(const std::string& given, const std::string& path, std::string* body,
          const ClientOptions& opts) {
  Probe p;
  p.url = BaseUrl(given);
  if (p.url.find("://") == std::string::npos) {
    p.error = "--url " + core::Printable(given) + ": not a URL; it takes http://HOST:PORT";
    p.usage = true;
    return p;
  }
  // httplib throws for a scheme it does not know: checked here, never thrown.
  bool https = p.url.starts_with("https://");
  if (!https && !p.url.starts_with("http://")) {
    p.error = core::Printable(p.url) + ": not an http:// or https:// URL";
    p.usage = true;
    return p;
  }
  if (!https && (!opts.user.empty() || !opts.cert.empty())) {
    p.error = core::Printable(p.url) +
              ": refusing to send a password or client certificate over plain http (use "
              "https://, or \"__scheme__\": \"https\" in the targets file)";
    p.usage = true;
    return p;
  }
  if (p.url.starts_with("https://")) third_party::RegisterTlsDigests();
  httplib::Client client(p.url, opts.cert, opts.key);
  if (!opts.ca.empty()) client.set_ca_cert_path(opts.ca);
  client.enable_server_certificate_verification(true);
  if (!opts.user.empty()) client.set_basic_auth(opts.user, opts.password);
  std::chrono::nanoseconds connect = std::chrono::seconds(3), read = std::chrono::seconds(5);
  if (opts.deadline.has_value()) {
    auto left = *opts.deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) {
      p.error = core::Printable(p.url) + " unreachable: not asked: the deadline (--timeout) passed";
      return p;
    }
    connect = std::min(connect, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
    read = std::min(read, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
  }
  client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(connect));
  client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(read));
  std::string received;
  bool too_large = false;
  bool timed_out = false;
  httplib::Result res = [&] {
    // At the deadline the client is stopped from here: its socket is shut
    // down under the read, which then returns.
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::thread watch;
    if (opts.deadline.has_value()) {
      watch = std::thread([&] {
        std::unique_lock<std::mutex> lock(mu);
        if (cv.wait_until(lock, *opts.deadline, [&] { return done; })) return;
        timed_out = true;
        // stop() interrupts only a request whose socket is open: asked
        // again until the request ends.
        do {
          client.stop();
        } while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; }));
      });
    }
    httplib::Result r = client.Get(path, [&](const char* data, size_t n) {
      if (received.size() + n > opts.max_bytes) {
        too_large = true;
        return false;
      }
      received.append(data, n);
      return true;
    });
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_one();
    if (watch.joinable()) watch.join();
    return r;
  }();
  if (too_large || !res) {
    std::string why = too_large ? "its answer is larger than " +
                                      std::to_string(opts.max_bytes >> 20) + " MiB (cut off there)"
                      : timed_out ? "no whole answer before the deadline (--timeout)"
                                  : Why(res.error());
    p.error = core::Printable(p.url) + " unreachable: " + why;
    return p;
  }
  if (res->status != 200 && !(path == "/healthz" && res->status == 503)) {
    p.error = core::Printable(p.url) + path + " answered " + std::to_string(res->status);
    if (res->status == 401) {
      p.error += opts.user.empty() ? ": it asks for a user (--user, and the password in "
                                     "--password-file or MESH_HOST_PASSWORD)"
                                   : ": user " + core::Printable(opts.user) +
                                         " and that password are not accepted";
    }
    return p;
  }
  *body = std::move(received);
  return p;
}

Probe FetchStatus(const std::string& given, const ClientOptions& opts) {
  std::string body;
  Probe p = Get(given, "/status", &body, opts);
  if (!p.error.empty()) return p;
  p.doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (p.doc.is_discarded() || !p.doc.is_object() || !p.doc.contains("healthy") ||
      !p.doc["healthy"].is_boolean()) {
    p.error = core::Printable(p.url) + "/status is not a mesh-host status document";
  }
  return p;
}

}  // namespace

int RunStatus(const std::string& given, std::ostream& out, std::ostream& err,
              const ClientOptions& client) {
  Probe p = FetchStatus(given, client);
  if (p.usage) {
    err << "mesh-host: " << p.error << "\n";
    return 2;
  }
  if (!p.error.empty()) {
    err << "mesh-host: " << p.error << "\n";
    return 2;
  }
  out << FormatStatusTable(p.doc);
  return Healthy(p.doc) ? 0 : 1;
}

core::Result<std::vector<std::string>> ReadTargets(const std::string& path,
                                                   const std::string& default_scheme) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Fail("--targets " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  auto fail = [&](const std::string& why) {
    return core::Fail("--targets " + path + ": " + why +
                      " (expected Prometheus file_sd JSON: [{\"targets\": [\"HOST:PORT\", ...], "
                      "\"labels\": {...}}, ...])");
  };
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail("not JSON");
  if (!doc.is_array()) return fail("not a list of target groups");
  std::vector<std::string> urls;
  for (const nlohmann::json& group : doc) {
    if (!group.is_object() || !group.contains("targets") || !group["targets"].is_array()) {
      return fail("a group without a \"targets\" list");
    }
    std::string scheme = default_scheme;
    if (group.contains("labels") && group["labels"].is_object() &&
        group["labels"].contains("__scheme__") && group["labels"]["__scheme__"].is_string()) {
      scheme = group["labels"]["__scheme__"].get<std::string>();
      if (scheme != "http" && scheme != "https")
        return fail("a __scheme__ other than http or https");
    }
    for (const nlohmann::json& t : group["targets"]) {
      if (!t.is_string() || t.get_ref<const std::string&>().empty()) {
        return fail("a target that is not a \"HOST:PORT\" string");
      }
      urls.push_back(scheme + "://" + t.get<std::string>());
    }
  }
  if (urls.empty()) return fail("no targets");
  return urls;
}

std::string FleetLine(const std::string& target, const FleetRow& row) {
  return Fit(core::Printable(target), 22) + " " + Fit(row.machine, 14) + " " +
         Fit(row.generation, 6) + " " + Fit(row.health, 12) + " " + row.what;
}

FleetRow ProbeRow(const std::string& url, const ClientOptions& opts) {
  FleetRow row;
  Probe p = FetchStatus(url, opts);
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
  if (Healthy(p.doc)) {
    row.health = "healthy";
    row.healthy = true;
    return row;
  }
  row.health = "NOT HEALTHY";
  // /healthz names what is wrong, one line each.
  std::string body;
  Probe h = Get(url, "/healthz", &body, opts);
  std::vector<std::string> lines;
  for (size_t at = 0; h.error.empty() && at < body.size();) {
    size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    if (end > at)
      lines.push_back(core::Printable(std::string_view(body).substr(at, end - at), 200));
    at = end + 1;
  }
  row.what = lines.empty() ? "(/healthz says nothing more)" : lines[0];
  if (lines.size() > 1) row.what += " (+" + std::to_string(lines.size() - 1) + " more)";
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
    if (base.starts_with("http://") && (!client.user.empty() || !client.cert.empty())) {
      err << "mesh-host: " << core::Printable(base)
          << ": refusing to send a password or client certificate over plain http (use "
             "https://, or \"__scheme__\": \"https\" in the targets file)\n";
      return 2;
    }
  }
  // In parallel, each bounded by its timeouts: 200 machines, some down,
  // answer in seconds, not in 200 connect timeouts.
  std::vector<FleetRow> rows(urls.size());
  std::atomic<size_t> next{0};
  size_t workers = std::min<size_t>(urls.size(), 32);
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < urls.size();) rows[i] = ProbeRow(urls[i], client);
    });
  }
  for (std::thread& t : pool) t.join();
  out << Fit("TARGET", 22) << " " << Fit("MACHINE", 14) << " " << Fit("GEN", 6) << " "
      << Fit("HEALTH", 12) << " WHAT FAILS\n";
  size_t healthy = 0, unreachable = 0;
  for (size_t i = 0; i < urls.size(); ++i) {
    std::string line =
        FleetLine(BaseUrl(urls[i]).substr(BaseUrl(urls[i]).find("://") + 3), rows[i]);
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
    if (rows[i].healthy) ++healthy;
    if (rows[i].health == "UNREACHABLE") ++unreachable;
  }
  out << urls.size() << " machine(s): " << healthy << " healthy, "
      << urls.size() - healthy - unreachable << " not healthy, " << unreachable << " unreachable\n";
  return healthy == urls.size() ? 0 : 1;
}

int RunStatusVerb(const std::vector<std::string>& urls, const std::string& targets,
                  const std::string& default_url, std::ostream& out, std::ostream& err,
                  ClientOptions client, const std::string& password_file,
                  std::chrono::nanoseconds timeout) {
  client.deadline = std::chrono::steady_clock::now() + timeout;
  if (!password_file.empty()) {
    std::ifstream in(password_file, std::ios::binary);
    if (!in) {
      err << "mesh-host: --password-file " << password_file << ": " << std::strerror(errno) << "\n";
      return 2;
    }
    std::getline(in, client.password);
  } else if (const char* env = std::getenv("MESH_HOST_PASSWORD"); env != nullptr) {
    client.password = env;
  }
  if (urls.size() <= 1 && targets.empty()) return RunStatus(default_url, out, err, client);
  std::vector<std::string> all = urls;
  if (!targets.empty()) {
    // A targets file rarely names the scheme (Prometheus keeps it on the
    // job): with credentials or a CA, the hosts are behind TLS.
    bool tls = !client.user.empty() || !client.ca.empty() || !client.cert.empty();
    auto more = ReadTargets(targets, tls ? "https" : "http");
    if (!more) {
      err << "mesh-host: " << core::Printable(more.error().message) << "\n";
      return 2;
    }
    all.insert(all.end(), more->begin(), more->end());
  }
  return RunFleetStatus(all, out, err, client);
}

}  // namespace mesh::cli
