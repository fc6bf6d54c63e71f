#include "host/cli/validate_command.h"

#include <nlohmann/json.hpp>

#include "host/cli/apply_command.h"
#include "host/core/printable.h"

namespace mesh::cli {

int PrintValidation(const Validation& v, bool json, std::ostream& out, std::ostream& err) {
  bool valid = v.refusals.empty();
  if (json) {
    nlohmann::json signer = nullptr;
    if (v.signer.has_value()) {
      signer = {{"key_id", v.signer->key_id}, {"trusted_comment", v.signer->trusted_comment}};
    }
    nlohmann::json doc = {
        {"declaration", v.declaration},
        {"valid", valid},
        {"machine", v.machine.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.machine)},
        {"generation", v.generation},
        {"resources", v.resources},
        {"refusals", v.refusals},
        {"problems", v.refusals.size() + v.unnamed},
        {"warnings", v.warnings},
        {"signature", signer}};
    // Declaration text is the operator's own, not always UTF-8: replaced,
    // never a throw.
    out << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return valid ? kExitOk : kExitRefused;
  }
  // The declaration's own text (an unknown key, a machine name) is in
  // these words: escaped, as apply escapes them, so that no byte of it
  // reaches the terminal as a control sequence or a line of its own.
  for (const std::string& r : v.refusals) err << "refused: " << core::Printable(r) << "\n";
  if (v.unnamed > 0) err << "refused: ... and " << v.unnamed << " more\n";
  for (const std::string& w : v.warnings) err << "warning: " << core::Printable(w) << "\n";
  if (valid) {
    out << core::Printable(v.declaration) << ": valid: machine " << core::Printable(v.machine)
        << ", generation " << v.generation << ", " << v.resources << " resource(s)"
        << (v.signer.has_value() ? ", signed by " + v.signer->key_id : std::string()) << "\n";
  } else {
    out << core::Printable(v.declaration) << ": refused (" << v.refusals.size() + v.unnamed
        << " problem(s)); nothing was "
        << "touched\n";
  }
  return valid ? kExitOk : kExitRefused;
}

}  // namespace mesh::cli
