#include "host/reconcile/private_declaration.h"

#include <algorithm>

namespace mesh::reconcile {

core::Status CheckCredentialsPrivate(const core::Declaration& declaration,
                                     const ports::DeclarationSource& source) {
  auto exposed = source.ReadableByOthers();
  if (!exposed.has_value()) return core::Ok();
  auto credential =
      std::find_if(declaration.resources.begin(), declaration.resources.end(),
                   [](const core::Resource& r) { return r.kind == core::Kind::kCredential; });
  if (credential == declaration.resources.end()) return core::Ok();
  return core::Fail("declaration " + exposed->path + " holds credentials (resource " +
                    credential->id + ") and users other than its owner can read it (mode " +
                    core::FormatMode(exposed->mode) + "): chmod 0600 " + exposed->path);
}

core::Status CheckChangedByRootAlone(const ports::DeclarationSource& source) {
  auto changeable = source.ChangeableByOthers();
  if (!changeable.has_value()) return core::Ok();
  return core::Fail(*changeable +
                    "; whoever can change it decides what this host runs as root: make it and "
                    "its directories root's alone, or sign it and pass --verify-key");
}

bool MayHoldCredentials(std::string_view text) {
  return text.find("credential") != std::string_view::npos ||
         text.find("\\u") != std::string_view::npos;
}

}  // namespace mesh::reconcile
