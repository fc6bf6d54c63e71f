// libFuzzer target: the last-good loader (core/last_good.h). Whatever
// last-good.json holds (a torn disk, a hand edit), reading it must not
// crash or hang, and what reads must survive a save and a read unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/core/last_good.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto kept = mesh::core::ParseLastGood(text);
  if (!kept) return 0;
  auto saved = mesh::core::SerializeLastGood(*kept, "fuzz");
  if (!saved) return 0;  // a kept text JSON cannot carry: refused at save, said
  auto again = mesh::core::ParseLastGood(*saved);
  if (!again || !(*again == *kept)) std::abort();
  return 0;
}
