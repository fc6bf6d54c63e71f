// libFuzzer target: the intent loader. Whatever intent.json holds (a torn
// disk, a hand edit), reading it must not crash or hang, and what reads
// must survive a save and a read unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/core/intent.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto intent = mesh::core::ParseIntent(text);
  if (!intent) return 0;
  auto again = mesh::core::ParseIntent(mesh::core::SerializeIntent(*intent));
  if (!again || !(*again == *intent)) std::abort();
  return 0;
}
