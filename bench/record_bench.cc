// The record's two directions, alone: how fast a state.json of N entries is
// parsed (what every fresh `mesh-host apply` pays before it can prove a
// no-op) and serialized (what an apply that changed something pays), beside
// simdjson's parse of the same lines with nothing read from them (the
// parser's floor).
//
//   record_bench --entries 10000 [--repeat 9]
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "host/core/record.h"

namespace {

using mesh::bench::MedianMs;

// Each line parsed by simdjson and nothing read from it: the parser's
// floor under the record's reader (host/core/record_read.cc).
size_t ParseLinesOnly(std::string_view text) {
  simdjson::dom::parser parser;
  size_t lines = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    simdjson::dom::element line;
    if (parser.parse(text.data() + at, end - at).get(line) == simdjson::SUCCESS) ++lines;
    at = end + 1;
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  int entries = mesh::bench::IntFlag(argc, argv, "--entries", 10000);
  int repeat = mesh::bench::IntFlag(argc, argv, "--repeat", 9);
  mesh::core::Record record;
  record.want_version = mesh::core::Record::kWantVersion;
  record.machine = "bench";
  record.generation = 1;
  record.declaration_digest = std::string(64, 'd');
  record.settled_declaration_digest = record.declaration_digest;
  for (int i = 0; i < entries; ++i) {
    char path[64];
    std::snprintf(path, sizeof path, "/data/d%04d/f%06d.conf", i / 100, i);
    mesh::core::RecordEntry e;
    e.kind = "file";
    e.digest = "sha256:" + std::string(64, "0123456789abcdef"[i % 16]);
    e.applied_at = "2026-11-30T06:34:11.495Z";
    e.position = static_cast<uint64_t>(i);
    e.written.push_back(
        {path, "145:1796020451597353897:1796020451597353897:" + std::to_string(10952930 + i),
         std::string(32, "fedcba9876543210"[i % 16]), 0, false});
    record.resources["f" + std::to_string(i)] = std::move(e);
  }
  std::string text;
  double serialize_ms = MedianMs(repeat, [&] { text = mesh::core::SerializeRecord(record); });
  size_t parsed_entries = 0;
  double parse_ms = MedianMs(repeat, [&] {
    auto r = mesh::core::ParseRecord(text);
    parsed_entries = r ? r->resources.size() : 0;
  });
  size_t lines = 0;
  double lex_ms = MedianMs(repeat, [&] { lines = ParseLinesOnly(text); });
  double mb = static_cast<double>(text.size()) / (1 << 20);
  std::printf("# %d entries, %.1f MiB of state.json; median of %d\n", entries, mb, repeat);
  std::printf("%-40s %8.1f ms  %6.0f MiB/s\n", "parse (ParseRecord)", parse_ms,
              mb / parse_ms * 1000);
  std::printf("%-40s %8.1f ms  %6.0f MiB/s  (%.2fx of parse)\n",
              "lines parsed only (simdjson, no fields)", lex_ms, mb / lex_ms * 1000,
              lex_ms / parse_ms);
  std::printf("%-40s %8.1f ms  %6.0f MiB/s\n", "serialize (SerializeRecord)", serialize_ms,
              mb / serialize_ms * 1000);
  return parsed_entries == static_cast<size_t>(entries) && lines == parsed_entries + 1 ? 0 : 1;
}
