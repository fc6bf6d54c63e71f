#include "host/core/apply_report.h"

namespace mesh::core {

std::string_view ApplyResultName(ApplyResult result) {
  switch (result) {
    case ApplyResult::kOk:
      return "ok";
    case ApplyResult::kFailed:
      return "failed";
    case ApplyResult::kRefused:
      return "refused";
  }
  return "?";
}

}  // namespace mesh::core
