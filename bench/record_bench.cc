// The record's two directions, alone: how fast a state.json of N entries is
// parsed (what every fresh `mesh-host apply` pays before it can prove a
// no-op) and serialized (what an apply that changed something pays), beside
// nlohmann's own SAX pass over the same bytes with a handler that does
// nothing (the lexer's floor).
//
//   record_bench --entries 10000 [--repeat 9]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/timing.h"
#include "host/core/record.h"

namespace {

using mesh::bench::MedianMs;

// Counts events and nothing else: what lexing alone costs.
struct NullHandler : nlohmann::json_sax<nlohmann::json> {
  size_t events = 0;
  bool null() override { return ++events; }
  bool boolean(bool) override { return ++events; }
  bool number_integer(number_integer_t) override { return ++events; }
  bool number_unsigned(number_unsigned_t) override { return ++events; }
  bool number_float(number_float_t, const string_t&) override { return ++events; }
  bool string(string_t&) override { return ++events; }
  bool binary(binary_t&) override { return ++events; }
  bool start_object(std::size_t) override { return ++events; }
  bool key(string_t&) override { return ++events; }
  bool end_object() override { return ++events; }
  bool start_array(std::size_t) override { return ++events; }
  bool end_array() override { return ++events; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

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
  double lex_ms = MedianMs(repeat, [&] {
    NullHandler h;
    nlohmann::json::sax_parse(text, &h);
  });
  double mb = static_cast<double>(text.size()) / (1 << 20);
  std::printf("# %d entries, %.1f MiB of state.json; median of %d\n", entries, mb, repeat);
  std::printf("%-40s %8.1f ms  %6.0f MiB/s\n", "parse (ParseRecord)", parse_ms,
              mb / parse_ms * 1000);
  std::printf("%-40s %8.1f ms  %6.0f MiB/s  (%.2fx of parse)\n",
              "lex only (nlohmann SAX, null handler)", lex_ms, mb / lex_ms * 1000,
              lex_ms / parse_ms);
  std::printf("%-40s %8.1f ms  %6.0f MiB/s\n", "serialize (SerializeRecord)", serialize_ms,
              mb / serialize_ms * 1000);
  return parsed_entries == static_cast<size_t>(entries) ? 0 : 1;
}
