// SHA-256 and base64, the two encodings the declaration and the record speak.
//
// Thin wrappers over OpenSSL's libcrypto so the rest of the code never
// includes OpenSSL headers and never hand-rolls a hash or a codec.
//
// The hash uses libcrypto's direct SHA-256 functions, not EVP: EVP in
// OpenSSL 3 loads the provider machinery on first use, about 2 MiB of
// resident pages in a daemon whose whole idle size is measured in MiB
// (docs/performance.md), and costs an allocation and a fetch per digest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "host/core/result.h"

namespace mesh::core {

// Incremental hashing, for digests built from many fields or many files.
class Sha256 {
 public:
  Sha256();
  ~Sha256();  // NOLINT(performance-trivially-destructible): frees the OpenSSL context
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& Update(std::string_view bytes);
  // Length-prefixed, so that ("ab","c") and ("a","bc") hash differently.
  Sha256& Field(std::string_view bytes);
  Sha256& Field(uint64_t number);
  // Lower-case hex of the 32-byte digest. The object is spent afterwards.
  std::string HexDigest();

 private:
  // SHA256_CTX, stored inline (no allocation per digest) but opaque, to keep
  // OpenSSL out of this header; its size is checked in sha256.cc.
  alignas(8) unsigned char ctx_[112];
};

std::string Sha256Hex(std::string_view bytes);

// Lower-case hex of HMAC-SHA-256(key, bytes). Uses EVP (OpenSSL's providers):
// only applies that declare credentials pay for it.
std::string HmacSha256Hex(std::string_view key, std::string_view bytes);

// The SHA-256 of `bytes` in base64, as a Content-Security-Policy hash
// source ('sha256-...') spells it.
std::string Sha256Base64(std::string_view bytes);

// Standard base64 with '=' padding and no line breaks.
std::string EncodeBase64(std::string_view bytes);

// Strict: refuses characters outside the alphabet and bad padding.
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace mesh::core
