// `mesh-host validate`: a declaration checked as an apply would check it
// before touching anything — every refusal at once, this machine's name
// (with --machine), the signature (with --verify-key), each bundle's
// artifact and digest (when --artifacts exists) — and each unit text as
// systemd itself reads it (systemd-analyze verify, where it is installed).
// It touches nothing: no state directory, no root, no bus. Exit 0 valid,
// 2 refused; `--output json` for CI.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "host/core/apply_report.h"

namespace mesh::cli {

struct Validation {
  std::string declaration;  // the file
  std::string machine;
  uint64_t generation = 0;
  uint64_t resources = 0;
  // Each names the resource and field (or the flag, or the signature file)
  // and what is wrong; empty: valid.
  std::vector<std::string> refusals;
  // Refusals found past those named (a declaration's are named up to 50).
  size_t unnamed = 0;
  // What systemd-analyze says of the unit texts, and checks not made
  // (no artifacts directory, no systemd-analyze): never a refusal, since a
  // unit's binaries may be on the target machines only.
  std::vector<std::string> warnings;
  std::optional<core::Signer> signer;
};

// Prints the verdict (text: each refusal and warning on `err`, one summary
// line on `out`; json: one object on `out`) and returns the exit code.
int PrintValidation(const Validation& v, bool json, std::ostream& out, std::ostream& err);

}  // namespace mesh::cli
