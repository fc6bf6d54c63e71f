// `mesh-host status --prometheus URL`: the fleet's state as its Prometheus
// holds it (the HTTP API, /api/v1/query: Thanos, Mimir and other compatible
// stores too), printed as the fleet table.
#pragma once

#include <ostream>
#include <string>

#include "host/cli/peer.h"

namespace mesh::cli {

// One line per instance of a job matching mesh-host.*: UNREACHABLE when its
// up is 0, NOT HEALTHY with the first of a refused declaration, its failed
// resources, its units declared running that are not up, its units flapping
// (the shipped alerts' expressions), else healthy. Prometheus knows no
// machine names: that column is "-". Exit 0 only when every instance is
// healthy, 1 otherwise, 2 when Prometheus cannot be asked, answers what is
// not its API, or scrapes no mesh-host at all. TLS and basic auth as for
// the hosts.
int RunPrometheusStatus(const std::string& prometheus_url, std::ostream& out, std::ostream& err,
                        const ClientOptions& client = {});

}  // namespace mesh::cli
