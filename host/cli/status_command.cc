#include "host/cli/status_command.h"

#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "host/core/printable.h"

namespace mesh::cli {
namespace {

std::string Fit(std::string s, size_t width) {
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

int RunStatus(const std::string& given, std::ostream& out, std::ostream& err) {
  // The host's base URL; a trailing "/" or the path of /status itself
  // (what one copies from a browser) means the same host.
  std::string url = given;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/status")) url.resize(url.size() - std::string_view("/status").size());
  if (url.find("://") == std::string::npos) {
    err << "mesh-host: --url " << given << ": not a URL; it takes http://HOST:PORT\n";
    return 2;
  }
  httplib::Client client(url);
  client.set_connection_timeout(std::chrono::seconds(3));
  client.set_read_timeout(std::chrono::seconds(5));
  auto res = client.Get("/status");
  if (!res) {
    std::string why = res.error() == httplib::Error::Connection
                          ? "nothing answers there (is `mesh-host run` listening on that address "
                            "and port?)"
                      : res.error() == httplib::Error::Read
                          ? "it accepted the connection but sent no answer in time"
                          : httplib::to_string(res.error());
    err << "mesh-host: " << url << " unreachable: " << why << "\n";
    return 2;
  }
  if (res->status != 200) {
    err << "mesh-host: " << url << "/status answered " << res->status << "\n";
    return 2;
  }
  nlohmann::json doc = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("healthy") ||
      !doc["healthy"].is_boolean()) {
    err << "mesh-host: " << url << "/status is not a mesh-host status document\n";
    return 2;
  }
  out << FormatStatusTable(doc);
  return Healthy(doc) ? 0 : 1;
}

}  // namespace mesh::cli
