#include "host/cli/prometheus_status.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "host/cli/fleet_table.h"
#include "host/core/printable.h"
#include "host/core/result.h"

namespace mesh::cli {
namespace {

// The jobs a fleet's mesh-hosts are scraped under, as the shipped alerts
// select them (MeshHostDown).
constexpr std::string_view kJob = R"(job=~"mesh-host.*")";

// A sample of an instant vector: its labels, each a string, and
// [time, "value"].
bool IsSample(const nlohmann::json& sample) {
  const nlohmann::json* metric = Member(sample, "metric");
  const nlohmann::json* value = Member(sample, "value");
  return metric != nullptr && metric->is_object() &&
         std::all_of(metric->begin(), metric->end(),
                     [](const nlohmann::json& label) { return label.is_string(); }) &&
         value != nullptr && value->is_array() && value->size() == 2 && (*value)[0].is_number() &&
         (*value)[1].is_string();
}

// One instant query's result vector, or why not.
core::Result<nlohmann::json> Query(const std::string& base, const std::string& promql,
                                   const ClientOptions& opts) {
  Answer a =
      Fetch(base, "/api/v1/query?query=" + httplib::detail::encode_query_param(promql), opts);
  std::string not_api = core::Printable(a.url) +
                        "/api/v1/query did not answer as Prometheus's HTTP API does (is it a "
                        "Prometheus URL?)";
  nlohmann::json doc = ParseAnswer(a.body);
  if (a.status != 0 && a.status != 200) {
    // The API's own refusal (a query it cannot run, a timeout): its words.
    if (Str(doc, "status") == "error" && !Str(doc, "error").empty()) {
      return core::Fail(core::Printable(a.url) + "/api/v1/query refused the query (" +
                        core::Printable(Str(doc, "errorType"), 40) +
                        "): " + core::Printable(Str(doc, "error"), 200));
    }
    // One that asks for a user says how to give one (peer.h: Answered).
    if (a.status == 401) return core::Fail(a.error);
    return core::Fail(not_api + ": it answered " + std::to_string(a.status));
  }
  if (!a.error.empty()) return core::Fail(a.error);
  const nlohmann::json* data = Member(doc, "data");
  const nlohmann::json* result = data != nullptr ? Member(*data, "result") : nullptr;
  if (Str(doc, "status") != "success" || result == nullptr || !result->is_array()) {
    return core::Fail(not_api);
  }
  // Each sample as the API gives one, else rows of nothing would be shown.
  if (!std::all_of(result->begin(), result->end(), IsSample)) {
    return core::Fail(not_api + ": a sample of its answer is not {\"metric\": {labels}, " +
                      "\"value\": [time, \"value\"]}");
  }
  // A partial answer (a store or shard behind a Thanos or Mimir query
  // layer not answering) may lack the very hosts that are wrong.
  if (const nlohmann::json* warnings = Member(doc, "warnings");
      warnings != nullptr && warnings->is_array() && !warnings->empty()) {
    const nlohmann::json& first = (*warnings)[0];
    return core::Fail(core::Printable(a.url) + " says its answer may be partial: " +
                      (first.is_string() ? core::Printable(first.get<std::string>(), 200)
                                         : std::string("(a warning that is not text)")));
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

// What makes a host's /healthz 503, as the shipped alerts read it, in the
// order /healthz says it; each sample's words.
struct Wrong {
  std::string promql;
  std::string (*words)(const nlohmann::json& sample);
};

std::vector<Wrong> WhatIsWrong() {
  std::string sel(kJob);
  return {
      {"mesh_host_units_unseen{" + sel + "} == 1",
       [](const nlohmann::json&) {
         return std::string("units unseen: it cannot read its units from systemd");
       }},
      {"mesh_host_declaration_refused{" + sel + "} == 1",
       [](const nlohmann::json& s) { return "declaration refused: " + Label(s, "reason"); }},
      {"mesh_host_resource_failed{" + sel + "} == 1",
       [](const nlohmann::json& s) {
         return "resource " + Label(s, "resource") + " (" + Label(s, "kind") + ") failed";
       }},
      {"mesh_host_unit_active{" + sel + "} == 0",
       [](const nlohmann::json& s) {
         return "unit " + Label(s, "unit") + " is not up, declared running";
       }},
      {"sum by (instance, unit) (increase({__name__=~\"mesh_host_unit_systemd_restarts_total|"
       "mesh_host_unit_restarts_total\"," +
           sel + "}[15m])) > 2.5",
       [](const nlohmann::json& s) {
         return "unit " + Label(s, "unit") + " restarted " + Value(s) + " time(s) in 15 minutes";
       }},
      // mesh-host itself in a loop (a crash, the watchdog killing a stalled
      // apply): each start resets what the stale rule counts from.
      {"changes(mesh_host_start_time_seconds{" + sel + "}[1h]) > 2",
       [](const nlohmann::json& s) {
         return "mesh-host itself started " + Value(s) + " time(s) again in the last hour";
       }},
      // Last: what the ones above may explain. Failed outside any one
      // resource (the record not saved, a bundle not read), or never
      // succeeded since the start; and stalled, as MeshHostReconcileStale
      // reads it.
      {"mesh_host_last_reconcile_timestamp_seconds{" + sel +
           "} > mesh_host_last_success_timestamp_seconds{" + sel + "}",
       [](const nlohmann::json&) { return std::string("the last apply failed"); }},
      {"time() - (mesh_host_last_success_timestamp_seconds{" + sel +
           "} > 0 or mesh_host_start_time_seconds{" + sel +
           "}) > 3 * mesh_host_reconcile_interval_seconds{" + sel + "}",
       [](const nlohmann::json&) {
         return std::string("no successful apply for three --interval periods");
       }},
  };
}

// Per instance, one sample to name and how many there are: a mass
// failure (10 resources failed on each of 10,000 hosts) as every sample
// would be 17 MiB, past the cap, and the command would say nothing just
// when it is needed most.
struct Said {
  std::string first;   // the first wrong, in /healthz's order
  uint64_t count = 0;  // all of them (a count Prometheus gives, so bounded)
};

core::Result<std::map<std::string, Said>> WrongByInstance(const std::string& given,
                                                          const ClientOptions& client) {
  std::map<std::string, Said> wrong;
  for (const Wrong& w : WhatIsWrong()) {
    auto first = Query(given, "topk by (instance) (1, " + w.promql + ")", client);
    if (!first) return core::Fail(first.error().message);
    auto counted = Query(given, "count by (instance) (" + w.promql + ")", client);
    if (!counted) return core::Fail(counted.error().message);
    std::map<std::string, uint64_t> counts;
    for (const nlohmann::json& s : *counted) {
      uint64_t n = 1;
      std::string v = Value(s);
      std::from_chars(v.data(), v.data() + v.size(), n);
      counts[Label(s, "instance")] = std::clamp<uint64_t>(n, 1, uint64_t{1} << 40);
    }
    for (const nlohmann::json& s : *first) {
      std::string instance = Label(s, "instance");
      Said& said = wrong[instance];
      if (said.first.empty()) said.first = w.words(s);
      auto n = counts.find(instance);
      said.count += n != counts.end() ? n->second : 1;
    }
  }
  return wrong;
}

}  // namespace

int RunPrometheusStatus(const std::string& given, std::ostream& out, std::ostream& err,
                        const ClientOptions& client) {
  if (RefusesPlainHttp(given, client, err)) return 2;
  auto fail = [&err](const std::string& why) {
    err << "mesh-host: --prometheus: " << why << "\n";
    return 2;
  };
  std::string sel = "{" + std::string(kJob) + "}";
  auto up = Query(given, "up" + sel, client);
  if (!up) return fail(up.error().message);
  // Scraped within the hour, and no sample now: a target gone from
  // discovery, or the shard or federation that carried it down. Left out,
  // a fleet that lost half its hosts read as all healthy.
  auto lost =
      Query(given,
            "group by (instance) (last_over_time(up" + sel + "[1h])) unless on (instance) up" + sel,
            client);
  if (!lost) return fail(lost.error().message);
  if (up->empty() && lost->empty()) {
    return fail(core::Printable(BaseUrl(given)) +
                " scrapes no mesh-host (no target of a job matching mesh-host.*)");
  }
  auto generations = Query(given, "mesh_host_declaration_generation" + sel, client);
  if (!generations) return fail(generations.error().message);
  // Every mesh-host exports its build_info: a target that answers
  // Prometheus without it (a wrong port in the inventory) is no mesh-host,
  // and no alert of the shipped rules can fire for it.
  auto built = Query(given, "group by (instance) (mesh_host_build_info" + sel + ")", client);
  if (!built) return fail(built.error().message);
  std::set<std::string> mesh_hosts;
  for (const nlohmann::json& s : *built) mesh_hosts.insert(Label(s, "instance"));
  std::map<std::string, FleetRow> rows;
  for (const nlohmann::json& s : *up) {
    FleetRow& row = rows[Label(s, "instance")];
    row.machine = row.generation = "-";
    if (Value(s) != "1") {
      row.health = "UNREACHABLE";
      row.what = "Prometheus cannot scrape it (up is 0)";
    } else if (!mesh_hosts.contains(Label(s, "instance"))) {
      row.health = "UNREACHABLE";
      row.what =
          "Prometheus scrapes it, and it exports no mesh_host_build_info: not a mesh-host (a "
          "wrong port in the targets?)";
    }
  }
  for (const nlohmann::json& s : *lost) {
    FleetRow& row = rows[Label(s, "instance")];
    row.machine = row.generation = "-";
    row.health = "UNREACHABLE";
    row.what =
        "no sample of it now, one within the hour (its target is gone, or the shard or "
        "federation that carries it is down)";
  }
  for (const nlohmann::json& s : *generations) {
    if (auto it = rows.find(Label(s, "instance")); it != rows.end()) {
      it->second.generation = Value(s);
    }
  }
  auto wrong = WrongByInstance(given, client);
  if (!wrong) return fail(wrong.error().message);
  std::vector<std::pair<std::string, FleetRow>> table;
  for (auto& [instance, row] : rows) {
    if (row.health.empty()) {
      const Said& said = (*wrong)[instance];
      row.what = said.count > 1 ? said.first + " (+" + std::to_string(said.count - 1) + " more)"
                                : said.first;
      row.healthy = row.what.empty();
      row.health = row.healthy ? "healthy" : "NOT HEALTHY";
    }
    table.emplace_back(instance, std::move(row));
  }
  return WriteFleetTable(table, out, " (as Prometheus sees them)");
}

}  // namespace mesh::cli
