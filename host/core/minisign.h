// Minisign public keys and detached signatures, verified with OpenSSL.
//
// With --verify-key, a declaration is applied only when a signature made by
// that key covers its exact bytes (SPEC "Declaration"). The declaration holds
// the machine and the generation, so a signature cannot be replayed onto
// another machine or an older generation.
//
// Formats (as `minisign -G` and `minisign -S` write them):
//   key:        [untrusted comment line] base64("Ed" || key id (8) || Ed25519 key (32))
//   signature:  untrusted comment line
//               base64(algorithm (2) || key id (8) || Ed25519 signature (64))
//               "trusted comment: " TEXT
//               base64(Ed25519 over signature (64) || TEXT)
// The algorithm "Ed" signs the bytes themselves (legacy, `minisign -S -l`);
// "ED" signs their BLAKE2b-512 (prehashed, the default).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/result.h"

namespace mesh::core {

struct MinisignKey {
  std::array<uint8_t, 8> id{};
  std::array<uint8_t, 32> public_key{};
};

// The key id as minisign prints it: 16 upper-case hex digits.
std::string MinisignKeyId(const std::array<uint8_t, 8>& id);

// A public key file's text (the comment line is optional). Errors say what
// is malformed.
Result<MinisignKey> ParseMinisignKey(std::string_view text);

// Why a declaration's signature does not let it be applied: the three an
// operator must tell apart, and a file that is not a signature at all.
enum class SignatureProblem { kMissing, kForeign, kTampered, kMalformed };

struct SignatureError {
  SignatureProblem problem;
  std::string message;  // names what failed; never quotes the signed bytes
};

// Verifies `signature` (a .minisig file's text) over `message` with `key`:
// the key id must be the key's, the signature must cover the bytes, and the
// global signature must cover the trusted comment. Returns that trusted
// comment, as signed (raw: its reader escapes it where it shows it).
std::expected<std::string, SignatureError> VerifyMinisign(const MinisignKey& key,
                                                          std::string_view signature,
                                                          std::string_view message);

}  // namespace mesh::core
