// SHA-256 and base64, the two encodings the declaration and the record speak.
//
// Thin wrappers over OpenSSL's libcrypto so the rest of the code never
// includes OpenSSL headers and never hand-rolls a hash or a codec.
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
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& Update(std::string_view bytes);
  // Length-prefixed, so that ("ab","c") and ("a","bc") hash differently.
  Sha256& Field(std::string_view bytes);
  Sha256& Field(uint64_t number);
  // Lower-case hex of the 32-byte digest. The object is spent afterwards.
  std::string HexDigest();

 private:
  void* ctx_;  // EVP_MD_CTX*, kept opaque to keep OpenSSL out of this header.
};

std::string Sha256Hex(std::string_view bytes);

// Strict: refuses characters outside the alphabet and bad padding.
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace mesh::core
