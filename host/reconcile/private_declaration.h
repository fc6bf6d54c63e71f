// A declaration that holds credentials is read by its owner alone: a
// declaration file others may read hands every secret in it to any local
// user, whatever mode the credential is written with. Refused as ssh
// refuses a private key others can read, with the chmod that fixes it.
// And an unsigned declaration is changed by root alone: whoever can write
// it runs commands as root (a unit_text's ExecStart=).
#pragma once

#include <string_view>

#include "host/core/declaration.h"
#include "host/core/result.h"
#include "host/ports/declaration_source.h"

namespace mesh::reconcile {

// Fails, naming the file, its mode, the first credential and the fix, when
// `declaration` holds a credential and `source` may be read by others.
core::Status CheckCredentialsPrivate(const core::Declaration& declaration,
                                     const ports::DeclarationSource& source);

// Fails, saying who else could change it and the fix, when users other
// than root or this process's user could change `source` (its file or a
// directory on its path). Called only when no signature is checked.
core::Status CheckChangedByRootAlone(const ports::DeclarationSource& source);

// Whether a declaration's text may hold a credential, read without parsing
// it (for a pass that writes before the whole declaration is parsed): a
// kind "credential" is spelt with those letters or with a \u escape, so a
// text with neither holds none.
bool MayHoldCredentials(std::string_view text);

}  // namespace mesh::reconcile
