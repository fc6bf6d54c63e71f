// The no-op reconcile, measured in process the way `mesh-host run` does it
// every interval: N declared files, applied once, then applied again with
// nothing to do. Prints one line per figure: name, value, floor, ratio.
//
//   noop_bench --files 10000 [--repeat 5]
//              [--noop-only N | --published-only N | --full-pass-only N | --touched-only N |
//               --parse-only N]
//              [--daemon-heap 1]
//
// Floors, measured in the same process on the same files: an lstat of every
// file (what the fingerprint check cannot avoid) and a read + SHA-256 of
// every file (what re-hashing would cost).
#include <sys/resource.h>
#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "host/adapters/daemon_heap.h"
#include "host/adapters/file_record_store.h"
#include "host/adapters/libarchive_reader.h"
#include "host/adapters/posix_file_system.h"
#include "host/adapters/system_clock.h"
#include "host/adapters/thread_background.h"
#include "host/core/declaration.h"
#include "host/core/sha256.h"
#include "host/reconcile/reconciler.h"
#include "host/status/status_board.h"
#include "metrics/host_metrics.h"

namespace {

using namespace mesh;
using bench::Clock;
using bench::MedianMs;
using bench::Ms;

void Row(const char* name, double value, const char* unit, double floor = 0,
         const char* floor_name = "") {
  if (floor > 0) {
    std::printf("%-44s %10.1f %-4s %-22s %10.1f  %6.2fx\n", name, value, unit, floor_name, floor,
                value / floor);
  } else {
    std::printf("%-44s %10.1f %-4s\n", name, value, unit);
  }
}

// For a profiler: nothing but the daemon's no-op, n times
// (valgrind --tool=callgrind --toggle-collect='*NoOps*').
[[gnu::noinline]] void NoOps(reconcile::Reconciler& daemon, const std::string& decl, int n) {
  for (int i = 0; i < n; ++i) daemon.Apply(decl);
}

// --daemon-heap 1: the daemon's malloc settings (adapters::PrepareDaemonHeap)
// and its trim after every apply (daemon.cc, ApplyOnce).
bool daemon_heap = false;

// What the daemon does with every apply's report: /status's picture and
// the metrics (daemon.cc, Publish).
void Publish(core::ApplyReport report, status::StatusBoard& board, metrics::HostMetrics& metrics) {
  metrics.ObserveApply(report);
  board.PublishApply(std::move(report));
  if (daemon_heap) adapters::ReleaseFreedHeap();
}

// Likewise: n no-ops, each published as the daemon publishes it.
[[gnu::noinline]] void PublishedNoOps(reconcile::Reconciler& daemon, const std::string& decl,
                                      status::StatusBoard& board, metrics::HostMetrics& metrics,
                                      int n) {
  for (int i = 0; i < n; ++i) Publish(daemon.Apply(decl), board, metrics);
}

// Likewise: nothing but the full pass, n times, in a function of its
// own (valgrind --tool=callgrind --toggle-collect='*FullPasses*').
[[gnu::noinline]] void FullPasses(reconcile::Reconciler& full, const std::string& decl, int n) {
  for (int i = 0; i < n; ++i) {
    full.Apply(decl);
    if (daemon_heap) adapters::ReleaseFreedHeap();
  }
}

// Likewise: the declaration's parse alone, n times (--toggle-collect='*Parses*').
[[gnu::noinline]] void Parses(const std::string& decl, int n) {
  for (int i = 0; i < n; ++i) (void)core::ParseDeclaration(decl);
}

// Likewise: n applies, each after 1% of the files were touched.
[[gnu::noinline]] void TouchedApplies(reconcile::Reconciler& daemon, const std::string& decl,
                                      const std::string& root,
                                      const std::vector<std::string>& paths, int n) {
  for (int k = 0; k < n; ++k) {
    for (size_t i = 0; i < paths.size(); i += 100) ::utime((root + paths[i]).c_str(), nullptr);
    daemon.Apply(decl);
  }
}

}  // namespace

int main(int argc, char** argv) {
  daemon_heap = bench::IntFlag(argc, argv, "--daemon-heap", 0) != 0;
  if (daemon_heap) adapters::PrepareDaemonHeap();
  int files = bench::IntFlag(argc, argv, "--files", 10000);
  int repeat = bench::IntFlag(argc, argv, "--repeat", 5);
  char tmpl[] = "/tmp/mesh-host-bench.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  for (const char* d : {"/root", "/artifacts", "/units"})
    std::filesystem::create_directories(dir + d);

  std::string decl = R"({"machine":"bench","generation":1,"resources":[)";
  std::vector<std::string> paths;
  for (int i = 0; i < files; ++i) {
    char path[64];
    std::snprintf(path, sizeof path, "/data/d%04d/f%06d.conf", i / 100, i);
    paths.push_back(path);
    std::string content = "# resource " + std::to_string(i) + "\\nkey = value\\n";
    for (int k = 0; k < 8; ++k) content += "setting_" + std::to_string(k) + " = on\\n";
    decl += std::string(i ? "," : "") + R"({"id":"f)" + std::to_string(i) +
            R"(","kind":"file","path":")" + path + R"(","content":")" + content + R"("})";
  }
  decl += "]}";

  auto root = std::move(*adapters::PosixFileSystem::Open(dir + "/root"));
  auto artifacts = std::move(*adapters::PosixFileSystem::Open(dir + "/artifacts"));
  auto units = std::move(*adapters::PosixFileSystem::Open(dir + "/units"));
  auto records = std::move(*adapters::FileRecordStore::Open(dir + "/state", true, /*keep=*/true));
  adapters::LibarchiveReader archives;
  adapters::SystemClock clock;
  adapters::ThreadBackground background;
  reconcile::ReconcilerPorts ports{.root = root.get(),
                                   .artifacts = artifacts.get(),
                                   .units = units.get(),
                                   .archives = &archives,
                                   .services = nullptr,
                                   .records = records.get(),
                                   .clock = &clock};
  // As the host wires it; --one-thread: every apply on the caller's thread
  // alone (no look ahead, no proof in halves), as before they were.
  if (bench::IntFlag(argc, argv, "--one-thread", 0) == 0) ports.background = &background;
  reconcile::ReconcilerOptions options;
  options.machine = "bench";
  reconcile::Reconciler daemon(ports, options);

  auto t0 = Clock::now();
  auto first = daemon.Apply(decl);
  double first_ms = Ms(Clock::now() - t0);
  if (first.result != core::ApplyResult::kOk) {
    std::fprintf(stderr, "first apply failed: %s\n", first.error.c_str());
    return 1;
  }

  // Floors on the same files.
  std::string root_dir = dir + "/root";
  double stat_ms = MedianMs(repeat, [&] {
    struct stat st;
    for (const std::string& p : paths) ::lstat((root_dir + p).c_str(), &st);
  });
  double sha_ms = MedianMs(repeat, [&] {
    for (const std::string& p : paths) {
      std::ifstream in(root_dir + p, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      core::Sha256Hex(bytes);
    }
  });

  if (int n = bench::IntFlag(argc, argv, "--noop-only", 0); n > 0) {
    daemon.Apply(decl);  // the record kept, as the daemon keeps it
    NoOps(daemon, decl, n);
    std::filesystem::remove_all(dir);
    return 0;
  }
  status::StatusBoard board;
  metrics::HostMetrics metrics("bench");
  Publish(first, board, metrics);
  if (int n = bench::IntFlag(argc, argv, "--published-only", 0); n > 0) {
    Publish(daemon.Apply(decl), board, metrics);
    PublishedNoOps(daemon, decl, board, metrics, n);
    std::filesystem::remove_all(dir);
    return 0;
  }
  // The daemon's no-op: same process, parsed declaration and record kept.
  size_t unchanged = 0;
  double daemon_ms = MedianMs(repeat, [&] {
    auto r = daemon.Apply(decl);
    if (daemon_heap) adapters::ReleaseFreedHeap();
    unchanged = std::count_if(r.outcomes.begin(), r.outcomes.end(),
                              [](const auto& o) { return o.outcome == core::Outcome::kUnchanged; });
  });
  // The same, with its report published as the daemon publishes it.
  double published_ms = MedianMs(repeat, [&] { Publish(daemon.Apply(decl), board, metrics); });
  // The same no-op through the full pass (declaration compared resource by
  // resource, as when the record cannot prove it): what the proof saves.
  reconcile::ReconcilerOptions full_options = options;
  full_options.confirm_from_record = false;
  reconcile::Reconciler full(ports, full_options);
  full.Apply(decl);  // parses once; later applies reuse the parse, as the daemon does
  if (int n = bench::IntFlag(argc, argv, "--touched-only", 0); n > 0) {
    TouchedApplies(daemon, decl, root_dir, paths, n);
    std::filesystem::remove_all(dir);
    return 0;
  }
  if (int n = bench::IntFlag(argc, argv, "--full-pass-only", 0); n > 0) {
    FullPasses(full, decl, n);
    std::filesystem::remove_all(dir);
    return 0;
  }
  double full_ms = MedianMs(repeat, [&] { FullPasses(full, decl, 1); });
  // Steps of the full pass measured alone.
  if (int n = bench::IntFlag(argc, argv, "--parse-only", 0); n > 0) {
    Parses(decl, n);
    std::filesystem::remove_all(dir);
    return 0;
  }
  double parse_ms = MedianMs(repeat, [&] { Parses(decl, 1); });
  double digest_ms = MedianMs(repeat, [&] { core::Sha256Hex(decl); });
  bool proven = daemon.Apply(decl).from_record;
  // A fresh process's no-op (what `mesh-host apply` does): stream the
  // record, hand each outcome over.
  double cold_ms = MedianMs(repeat, [&] {
    auto fresh_records = std::move(*adapters::FileRecordStore::Open(dir + "/state", true));
    reconcile::ReconcilerPorts p = ports;
    p.records = fresh_records.get();
    reconcile::Reconciler(p, options).Apply(decl, [](const core::ResourceOutcome&) {});
  });
  // 1% of the files touched (same bytes, new mtime): only those re-read.
  for (int i = 0; i < files; i += 100) ::utime((root_dir + paths[i]).c_str(), nullptr);
  auto t1 = Clock::now();
  auto touched = daemon.Apply(decl);
  double touched_ms = Ms(Clock::now() - t1);
  size_t still_unchanged =
      std::count_if(touched.outcomes.begin(), touched.outcomes.end(),
                    [](const auto& o) { return o.outcome == core::Outcome::kUnchanged; });
  // One in 64 or fewer touched is read again at every no-op, not recorded.
  auto t2 = Clock::now();
  bool reread_proven = daemon.Apply(decl).from_record;
  double reread_ms = Ms(Clock::now() - t2);
  // 5% touched: their new fingerprints are recorded (the record rewritten).
  for (int i = 0; i < files; i += 20) ::utime((root_dir + paths[i]).c_str(), nullptr);
  auto t3 = Clock::now();
  bool rewrite_proven = daemon.Apply(decl).from_record;
  double rewrite_ms = Ms(Clock::now() - t3);

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  std::printf("# %d files; median of %d; %zu unchanged after the no-op, %zu after the touch\n",
              files, repeat, unchanged, still_unchanged);
  Row("first apply (writes every file)", first_ms, "ms");
  Row(proven ? "no-op apply, daemon (in process)" : "no-op apply, daemon (NOT from record)",
      daemon_ms, "ms", stat_ms, "lstat sweep");
  Row("  and published (/status, metrics)", published_ms, "ms", stat_ms, "lstat sweep");
  Row("no-op apply, daemon, full pass", full_ms, "ms", stat_ms, "lstat sweep");
  Row("  of which: declaration parse alone", parse_ms, "ms", stat_ms, "lstat sweep");
  Row("  of which: declaration digest alone", digest_ms, "ms", stat_ms, "lstat sweep");
  Row("no-op apply, fresh process state", cold_ms, "ms", stat_ms, "lstat sweep");
  Row(touched.from_record ? "no-op apply after 1% touched (daemon)"
                          : "no-op apply after 1% touched (NOT from record)",
      touched_ms, "ms", stat_ms, "lstat sweep");
  Row(reread_proven ? "  the next no-op (reads those files again)"
                    : "  the next no-op (NOT from record)",
      reread_ms, "ms", stat_ms, "lstat sweep");
  Row(rewrite_proven ? "no-op apply after 5% touched (record rewritten)"
                     : "no-op apply after 5% touched (NOT from record)",
      rewrite_ms, "ms", stat_ms, "lstat sweep");
  Row("sha256 sweep of the same files", sha_ms, "ms", stat_ms, "lstat sweep");
  Row("peak RSS of this process", ru.ru_maxrss / 1024.0, "MiB");
  std::filesystem::remove_all(dir);
  return unchanged == static_cast<size_t>(files) && still_unchanged == static_cast<size_t>(files)
             ? 0
             : 1;
}
