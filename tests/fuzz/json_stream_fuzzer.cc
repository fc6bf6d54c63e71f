// libFuzzer target: the streamed JSON parse on arbitrary bytes. Wherever
// simdjson's walk gives an answer of its own, it must be nlohmann's answer:
// the same members, the same trees with the same number types, the same
// document, the same refusal (host/core/json_stream.h).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tests/host/core/json_stream_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string disagreement = mesh::core::testing_json::Disagreement(text);
  // With the declaration's kind of depth limit too: what is refused as too
  // deep, and what is handed over below it.
  if (disagreement.empty()) disagreement = mesh::core::testing_json::Disagreement(text, 4);
  if (!disagreement.empty()) {
    std::fprintf(stderr, "%s\n", disagreement.c_str());
    std::abort();
  }
  return 0;
}
