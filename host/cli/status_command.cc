#include "host/cli/status_command.h"

#include <httplib.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace mesh::cli {
namespace {

std::string Fit(std::string s, size_t width) {
  if (s.size() <= width) return s + std::string(width - s.size(), ' ');
  return s.substr(0, width - 1) + "~";
}

std::string Str(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

std::string Seconds(const nlohmann::json& last) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", last.value("duration_seconds", 0.0));
  return buf;
}

}  // namespace

std::string FormatStatusTable(const nlohmann::json& s) {
  std::string out;
  const nlohmann::json& last =
      s.contains("last_reconcile") ? s["last_reconcile"] : nlohmann::json();
  out += "machine " + Str(s, "machine") + "  generation " + Str(s, "generation") + "  " +
         (s.value("healthy", false) ? "HEALTHY" : "NOT HEALTHY") + "\n";
  out += "last apply " +
         (last.is_null() ? std::string("none yet")
                         : Str(last, "result") + " at " + Str(last, "finished_at") + " (" +
                               Seconds(last) + ")") +
         "\n";
  if (s.contains("error") && !s["error"].is_null()) {
    out += "declaration refused: " + s["error"].get<std::string>() + "\n";
  }
  // Fixed columns fit 80; the detail follows on its own indented line,
  // because it is the part worth reading whole.
  out += Fit("RESOURCE", 22) + " " + Fit("KIND", 10) + " " + Fit("OUTCOME", 9) + " " +
         Fit("UNIT STATE", 18) + " RESTARTS sd/host\n";
  for (const nlohmann::json& r : s.value("resources", nlohmann::json::array())) {
    std::string state, restarts;
    if (r.contains("unit") && r["unit"].is_object()) {
      const nlohmann::json& u = r["unit"];
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

int RunStatus(const std::string& url, std::ostream& out, std::ostream& err) {
  httplib::Client client(url);
  client.set_connection_timeout(std::chrono::seconds(3));
  client.set_read_timeout(std::chrono::seconds(5));
  auto res = client.Get("/status");
  if (!res) {
    err << "mesh-host: " << url << " unreachable: " << httplib::to_string(res.error()) << "\n";
    return 2;
  }
  if (res->status != 200) {
    err << "mesh-host: " << url << "/status answered " << res->status << "\n";
    return 2;
  }
  nlohmann::json doc = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("healthy")) {
    err << "mesh-host: " << url << "/status is not a mesh-host status document\n";
    return 2;
  }
  out << FormatStatusTable(doc);
  return doc.value("healthy", false) ? 0 : 1;
}

}  // namespace mesh::cli
