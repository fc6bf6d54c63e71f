// libFuzzer target: the declaration parser and validator on arbitrary bytes.
// It must never crash, hang, or accept a declaration that breaks its own
// invariants (ids valid, paths absolute and normal, units named).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/core/declaration.h"
#include "host/core/want.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decl = mesh::core::ParseDeclaration(text);
  if (!decl) return 0;
  for (const mesh::core::Resource& r : decl->resources) {
    if (!mesh::core::CheckId(r.id)) std::abort();
    if (r.HasFiles() && !mesh::core::CheckPath(r.path)) std::abort();
    if (r.HasUnit() && !mesh::core::CheckUnitName(r.unit().name)) std::abort();
    // Only a unit's resource holds a unit part (declaration.h), and every one does.
    if (r.HasUnit() != r.unit_spec.has_value()) std::abort();
    if (mesh::core::WantDigest(r, "k").size() !=
        (r.kind == mesh::core::Kind::kCredential ? 76 : 71))
      std::abort();  // "sha256:" or "hmac-sha256:", + 64
  }
  return 0;
}
