#include "host/reconcile/signature.h"

#include <string>

namespace mesh::reconcile {

core::Result<core::Signer> VerifyDeclarationSignature(ports::DeclarationSource& source,
                                                      const core::MinisignKey& key) {
  auto sig = source.Signature();
  if (!sig) return std::unexpected(sig.error());
  std::string where = "declaration signature " + sig->path + ": ";
  if (!sig->text.has_value()) {
    return core::Fail(where +
                      "missing; with --verify-key every declaration must be signed "
                      "(minisign -S -s KEY -m DECLARATION writes it)");
  }
  auto text = source.Text();
  if (!text) return std::unexpected(text.error());
  auto comment = core::VerifyMinisign(key, *sig->text, *text);
  if (!comment) return core::Fail(where + comment.error().message);
  return core::Signer{.key_id = core::MinisignKeyId(key.id),
                      .trusted_comment = std::move(*comment)};
}

core::Status CheckSignedGeneration(const core::Declaration& decl, const core::Record& record,
                                   bool had_record) {
  if (!had_record || decl.generation != record.generation || record.declaration_digest.empty() ||
      decl.digest == record.declaration_digest) {
    return core::Ok();
  }
  return core::Fail("declaration, field generation: " + std::to_string(decl.generation) +
                    " was applied from another declaration; with --verify-key a signed change "
                    "needs a higher generation (one generation, one declaration)");
}

}  // namespace mesh::reconcile
