#include "host/cli/status_command.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
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

// What went wrong with a connection, in words: a timeout is a timeout, a
// TLS failure says which check (httplib's enum names are not words).
std::string Why(httplib::Error error, const httplib::Client& client, const ClientOptions& opts,
                unsigned long tls_error) {
  switch (error) {
    case httplib::Error::Connection:
      return "nothing answers there (connection refused: is `mesh-host run` listening on that "
             "address and port?)";
    case httplib::Error::ConnectionTimeout:
      return "no connection within the connect timeout (the machine is down, or a firewall "
             "drops the packets)";
    case httplib::Error::Read:
      return "it accepted the connection but sent no whole answer in time";
    case httplib::Error::Write:
      return "the connection closed while the request was sent";
    case httplib::Error::SSLLoadingCerts:
      return "the --ca, --cert or --key file cannot be loaded";
    case httplib::Error::SSLServerVerification: {
      long code = client.get_openssl_verify_result();
      std::string what = code != X509_V_OK ? X509_verify_cert_error_string(code)
                                           : "its name is not the one in its certificate";
      return "its TLS certificate does not verify against " +
             (opts.ca.empty() ? std::string("the system's CAs (give --ca)") : "--ca " + opts.ca) +
             ": " + what;
    }
    case httplib::Error::SSLConnection: {
      std::string reason;
      // Only on this error path: the strings are not loaded at start.
      OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, nullptr);
      if (tls_error != 0 && ERR_reason_error_string(tls_error) != nullptr) {
        reason = ERR_reason_error_string(tls_error);
      }
      if (reason.find("wrong version number") != std::string::npos ||
          reason.find("packet length too long") != std::string::npos ||
          reason.find("http request") != std::string::npos) {
        return "the TLS handshake failed: it does not speak TLS (a plain-http host: "
               "\"__scheme__\": \"http\" in the targets file)";
      }
      if (reason.find("certificate required") != std::string::npos) {
        return "the TLS handshake failed: it asks for a client certificate (--cert, --key)";
      }
      if (reason.find("unknown ca") != std::string::npos ||
          reason.find("bad certificate") != std::string::npos) {
        return "the TLS handshake failed: it does not accept the client certificate";
      }
      return "the TLS handshake failed" + (reason.empty() ? "" : " (" + reason + ")");
    }
    default:
      return httplib::to_string(error);
  }
}

// A TLS handshake that failed without a reason on OpenSSL's queue (the
// peer answered something that is not TLS and closed): whether the same
// address answers a plain-http request, within a second and the deadline.
bool AnswersPlainHttp(const std::string& https_url, const ClientOptions& opts) {
  std::chrono::nanoseconds budget = std::chrono::seconds(1);
  if (opts.deadline.has_value()) {
    budget = std::min(budget, *opts.deadline - std::chrono::steady_clock::now());
  }
  if (budget <= std::chrono::nanoseconds(0)) return false;
  httplib::Client plain("http://" + https_url.substr(std::string_view("https://").size()));
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(budget);
  plain.set_connection_timeout(us);
  plain.set_read_timeout(us);
  return static_cast<bool>(plain.Get("/healthz"));
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
  // Credentials go only where the scheme is https: a plain-http target of
  // a mixed fleet is asked without them (RefusesPlainHttp keeps an http
  // URL typed with --user from being asked at all).
  if (https) third_party::RegisterTlsDigests();
  httplib::Client client(p.url, https ? opts.cert : "", https ? opts.key : "");
  if (https && !opts.ca.empty()) client.set_ca_cert_path(opts.ca);
  client.enable_server_certificate_verification(true);
  if (https && !opts.user.empty()) client.set_basic_auth(opts.user, opts.password);
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
  unsigned long tls_error = 0;
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
    ERR_clear_error();  // what the handshake leaves on this thread's queue says why
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
    tls_error = ERR_peek_last_error();
    cv.notify_one();
    if (watch.joinable()) watch.join();
    return r;
  }();
  if (!too_large && !res && res.error() == httplib::Error::SSLConnection && !timed_out &&
      AnswersPlainHttp(p.url, opts)) {
    p.error = core::Printable(p.url) +
              " unreachable: the TLS handshake failed: it does not speak TLS (it answers plain "
              "http: \"__scheme__\": \"http\" in the targets file)";
    return p;
  }
  if (too_large || !res) {
    std::string why = too_large ? "its answer is larger than " +
                                      std::to_string(opts.max_bytes >> 20) + " MiB (cut off there)"
                      : timed_out ? "no whole answer before the deadline (--timeout)"
                                  : Why(res.error(), client, opts, tls_error);
    p.error = core::Printable(p.url) + " unreachable: " + why;
    return p;
  }
  if (res->status != 200 && !(path == "/healthz" && res->status == 503)) {
    p.error = core::Printable(p.url) + path + " answered " + std::to_string(res->status);
    if (res->status == 401) {
      p.error += !https && !opts.user.empty()
                     ? ": it asks for a user, and credentials are sent only over https (give "
                       "it \"__scheme__\": \"https\" in the targets file)"
                 : opts.user.empty() ? ": it asks for a user (--user, and the password in "
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

// An http:// URL typed on the command line with --user or --cert: the
// operator meant to send them, and plain http would carry them in the
// clear. Refused before anything is asked. (A targets file's plain-http
// hosts are asked without them instead: one fleet may mix both.)
bool RefusesPlainHttp(const std::string& given, const ClientOptions& client, std::ostream& err) {
  if (!BaseUrl(given).starts_with("http://") || (client.user.empty() && client.cert.empty())) {
    return false;
  }
  err << "mesh-host: " << core::Printable(BaseUrl(given))
      << ": refusing to send a password or client certificate over plain http (use "
         "https://, or \"__scheme__\": \"https\" in the targets file)\n";
  return true;
}

}  // namespace

int RunStatus(const std::string& given, std::ostream& out, std::ostream& err,
              const ClientOptions& client) {
  if (RefusesPlainHttp(given, client, err)) return 2;
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

namespace {

// One instant query's result vector, or why not.
core::Result<nlohmann::json> Query(const std::string& base, const std::string& promql,
                                   const ClientOptions& opts) {
  std::string body;
  Probe p =
      Get(base, "/api/v1/query?query=" + httplib::detail::encode_query_param(promql), &body, opts);
  if (!p.error.empty()) {
    // "URL/api/v1/query?query=... answered 404": the query is noise there.
    size_t q = p.error.find("?query="), answered = p.error.find(" answered ");
    if (q != std::string::npos && answered != std::string::npos && q < answered) {
      return core::Fail(p.error.substr(0, q) + p.error.substr(answered) +
                        ": it did not answer as Prometheus's HTTP API does (is it a Prometheus "
                        "URL?)");
    }
    return core::Fail(p.error);
  }
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* data = Member(doc, "data");
  const nlohmann::json* result = data != nullptr ? Member(*data, "result") : nullptr;
  if (Str(doc, "status") != "success" || result == nullptr || !result->is_array()) {
    return core::Fail(core::Printable(p.url) +
                      "/api/v1/query did not answer as Prometheus's "
                      "HTTP API does (is it a Prometheus URL?)");
  }
  return *result;
}

std::string Label(const nlohmann::json& sample, const char* name) {
  const nlohmann::json* metric = Member(sample, "metric");
  return metric != nullptr ? Str(*metric, name) : "";
}

std::string Value(const nlohmann::json& sample) {
  const nlohmann::json* v = Member(sample, "value");
  return v != nullptr && v->is_array() && v->size() == 2 && (*v)[1].is_string()
             ? core::Printable((*v)[1].get<std::string>(), 40)
             : "";
}

}  // namespace

int RunPrometheusStatus(const std::string& given, std::ostream& out, std::ostream& err,
                        const ClientOptions& client) {
  if (RefusesPlainHttp(given, client, err)) return 2;
  const std::string job = R"({job=~"mesh-host.*"})";
  const std::string sel = R"(job=~"mesh-host.*")";
  // What /healthz would say, as the shipped alerts read it, in its order.
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {"refused", "mesh_host_declaration_refused{" + sel + "} == 1"},
      {"failed", "mesh_host_resource_failed{" + sel + "} == 1"},
      {"dead", "mesh_host_unit_active{" + sel + "} == 0"},
      {"flapping",
       "sum by (instance, unit) (increase({__name__=~\"mesh_host_unit_systemd_restarts_total|"
       "mesh_host_unit_restarts_total\"," +
           sel + "}[15m])) > 2.5"}};
  auto up = Query(given, "up" + job, client);
  if (!up) {
    err << "mesh-host: --prometheus: " << up.error().message << "\n";
    return 2;
  }
  auto generations = Query(given, "mesh_host_declaration_generation" + job, client);
  std::map<std::string, FleetRow> rows;
  std::map<std::string, std::vector<std::string>> what;
  for (const nlohmann::json& s : *up) {
    FleetRow& row = rows[Label(s, "instance")];
    row.machine = "-";
    row.generation = "-";
    if (Value(s) != "1") {
      row.health = "UNREACHABLE";
      row.what = "Prometheus cannot scrape it (up is 0)";
    }
  }
  if (generations) {
    for (const nlohmann::json& s : *generations) {
      auto it = rows.find(Label(s, "instance"));
      if (it != rows.end()) it->second.generation = Value(s);
    }
  }
  for (const auto& [kind, promql] : wrong) {
    auto result = Query(given, promql, client);
    if (!result) {
      err << "mesh-host: --prometheus: " << result.error().message << "\n";
      return 2;
    }
    for (const nlohmann::json& s : *result) {
      std::string line =
          kind == "refused" ? "declaration refused: " + Label(s, "reason")
          : kind == "failed"
              ? "resource " + Label(s, "resource") + " (" + Label(s, "kind") + ") failed"
          : kind == "dead"
              ? "unit " + Label(s, "unit") + " is not up, declared running"
              : "unit " + Label(s, "unit") + " restarted " + Value(s) + " time(s) in 15 minutes";
      what[Label(s, "instance")].push_back(line);
    }
  }
  out << Fit("TARGET", 22) << " " << Fit("MACHINE", 14) << " " << Fit("GEN", 6) << " "
      << Fit("HEALTH", 12) << " WHAT FAILS\n";
  size_t healthy = 0, unreachable = 0;
  for (auto& [instance, row] : rows) {
    if (row.health.empty()) {
      const std::vector<std::string>& lines = what[instance];
      if (lines.empty()) {
        row.health = "healthy";
        row.healthy = true;
        ++healthy;
      } else {
        row.health = "NOT HEALTHY";
        row.what = lines[0];
        if (lines.size() > 1) row.what += " (+" + std::to_string(lines.size() - 1) + " more)";
      }
    } else {
      ++unreachable;
    }
    std::string line = FleetLine(instance, row);
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << "\n";
  }
  out << rows.size() << " machine(s): " << healthy << " healthy, "
      << rows.size() - healthy - unreachable << " not healthy, " << unreachable
      << " unreachable (as Prometheus sees them)\n";
  return healthy == rows.size() && !rows.empty() ? 0 : 1;
}

int RunStatusVerb(const std::vector<std::string>& urls, const std::string& targets,
                  const std::string& default_url, std::ostream& out, std::ostream& err,
                  ClientOptions client, const std::string& password_file,
                  std::chrono::nanoseconds timeout, const std::string& prometheus) {
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
  if (!prometheus.empty()) return RunPrometheusStatus(prometheus, out, err, client);
  if (urls.size() <= 1 && targets.empty()) return RunStatus(default_url, out, err, client);
  for (const std::string& u : urls) {
    if (RefusesPlainHttp(u, client, err)) return 2;
  }
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
