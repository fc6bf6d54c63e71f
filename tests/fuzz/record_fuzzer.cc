// libFuzzer target: the record loader. Whatever state.json holds (a torn
// disk, a hand edit), loading must not crash, and what loads must survive a
// save and a load unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/core/record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto record = mesh::core::ParseRecord(text);
  if (!record) return 0;
  std::string once = mesh::core::SerializeRecord(*record);
  auto again = mesh::core::ParseRecord(once);
  if (!again || mesh::core::SerializeRecord(*again) != once) std::abort();
  return 0;
}
