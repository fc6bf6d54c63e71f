// The signature check of --verify-key: a declaration is applied only when
// it carries a minisign signature by the trusted key over its exact bytes.
// Checked before anything else, the no-op proof included, so a signature
// replaced under an unchanged declaration is caught.
#pragma once

#include "host/core/minisign.h"
#include "host/core/result.h"
#include "host/ports/declaration_source.h"

namespace mesh::reconcile {

// Ok when `source` is signed by `key`; else why not, naming the signature
// file and how to make one.
core::Status VerifyDeclarationSignature(ports::DeclarationSource& source,
                                        const core::MinisignKey& key);

}  // namespace mesh::reconcile
