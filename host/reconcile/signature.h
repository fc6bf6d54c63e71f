// The signature check of --verify-key: a declaration is applied only when
// it carries a minisign signature by the trusted key over its exact bytes.
// Checked before anything else, the no-op proof included, so a signature
// replaced under an unchanged declaration is caught.
#pragma once

#include "host/core/apply_report.h"
#include "host/core/declaration.h"
#include "host/core/minisign.h"
#include "host/core/record.h"
#include "host/core/result.h"
#include "host/ports/declaration_source.h"

namespace mesh::reconcile {

// The signer when `source` is signed by `key`; else why not, naming the
// signature file and how to make one.
core::Result<core::Signer> VerifyDeclarationSignature(ports::DeclarationSource& source,
                                                      const core::MinisignKey& key);

// Two declarations signed with one generation could be swapped for each
// other at will, each verifying: a signed change needs a new generation.
// Fails when `declaration` is not the one the record's generation was
// applied from.
core::Status CheckSignedGeneration(const core::Declaration& declaration, const core::Record& record,
                                   bool had_record);

}  // namespace mesh::reconcile
