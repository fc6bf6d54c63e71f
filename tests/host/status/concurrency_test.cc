// The apply loop and the unit watch write while HTTP handlers read: the
// snapshot, the metrics and the server under concurrent use. Run under TSan
// by ./tools/test (--config=tsan); here it also checks what readers see.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>
#include <vector>

#include "host/status/status_board.h"
#include "http/server.h"
#include "metrics/host_metrics.h"

namespace mesh::status {
namespace {

core::ApplyReport Report(uint64_t generation) {
  core::ApplyReport r;
  r.machine = "m";
  r.generation = generation;
  for (int i = 0; i < 20; ++i) {
    core::ResourceOutcome o;
    o.id = "svc" + std::to_string(i);
    o.kind = "service";
    o.outcome = i % 7 == 0 ? core::Outcome::kFailed : core::Outcome::kUnchanged;
    o.mutable_declared().unit = o.id + ".service";
    o.mutable_declared().state = "running";
    o.unit = core::UnitSnapshot{o.declared_unit(), "active", "running", "success", 0, 0};
    o.host_acted = i % 5 == 0;
    o.mutable_declared().restart_reason = core::RestartReason::kRestartOn;
    r.outcomes.push_back(o);
  }
  r.result = core::ApplyResult::kFailed;
  return r;
}

TEST(ConcurrencyTest, ReadersSeeWholeSnapshotsWhileWritersPublish) {
  StatusBoard board;
  metrics::HostMetrics metrics("t");
  http::StatusServer server(board, [&] { return metrics.Serialize(); });
  auto bound = server.Start({"127.0.0.1", 0});
  ASSERT_TRUE(bound.has_value());
  int port = std::stoi(bound->substr(bound->rfind(':') + 1));

  std::atomic<bool> done{false};
  std::thread applies([&] {
    for (uint64_t g = 1; g <= 300; ++g) {
      auto r = Report(g);
      board.PublishApply(r);
      metrics.ObserveApply(r);
    }
    done = true;
  });
  std::thread watch([&] {
    core::UnitStatus s;
    s.sub_state = "running";
    for (uint32_t i = 0; !done; ++i) {
      s.active_state = i % 2 ? "active" : "failed";
      s.n_restarts = i;
      bool up = board.PublishUnit("svc3.service", s, std::chrono::steady_clock::now());
      metrics.ObserveUnit("svc3.service", s, up);
    }
  });
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      uint64_t last = 0;
      while (!done) {
        auto snap = board.Get();
        if (snap->generation < last || (snap->reconciled && snap->resources.size() != 20)) ++bad;
        last = snap->generation;
        nlohmann::json j = ToJson(*snap);
        Judge(*snap);
        if (metrics.Serialize().find("mesh_host_reconciles_total") == std::string::npos) ++bad;
      }
    });
  }
  std::thread http_reader([&] {
    httplib::Client c("127.0.0.1", port);
    while (!done) {
      auto res = c.Get("/status");
      if (!res || nlohmann::json::parse(res->body, nullptr, false).is_discarded()) ++bad;
      auto m = c.Get("/metrics");
      if (!m || m->status != 200) ++bad;
    }
  });
  applies.join();
  watch.join();
  for (auto& r : readers) r.join();
  http_reader.join();
  server.Stop();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(board.Get()->generation, 300u);
}

}  // namespace
}  // namespace mesh::status
