#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "host/base/shared_library.h"
#include "host/core/sha256.h"

namespace mesh::http {
namespace {

// Compared against when the user is unknown: a valid bcrypt hash of
// nothing anyone knows, of the usual cost.
constexpr const char* kDummyHash = "$2b$10$ms8Ckawy3NvASqsENYQ.fuFUry0F8/9tDNQ/Phle5Y668iJa8eiO6";
constexpr size_t kMaxRemembered = 256;

}  // namespace

core::Result<BasicAuth::Crypt> BasicAuth::LoadCrypt() {
  // Never closed (SharedLibrary): reloads of the web config reuse it, and
  // one that failed (a passing EMFILE) is tried again by the next.
  static base::LoadOnce once;
  static Crypt crypt = nullptr;
  auto loaded = once([]() -> core::Status {
    auto lib = base::SharedLibrary::Open("libcrypt.so.1");
    if (!lib) return std::unexpected(lib.error());
    return lib->Bind("crypt_r", crypt);
  });
  if (!loaded) return std::unexpected(loaded.error());
  return crypt;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users, Crypt crypt)
    : users_(std::move(users)),
      crypt_(crypt),
      dummy_(users_.empty() ? kDummyHash : users_.begin()->second) {}

std::optional<BasicAuth::Credential> BasicAuth::Parse(std::string_view authorization) {
  // The scheme is case-insensitive (RFC 9110), as the toolkit reads it.
  constexpr std::string_view kBasic = "basic ";
  if (authorization.size() < kBasic.size() ||
      !std::equal(kBasic.begin(), kBasic.end(), authorization.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    return std::nullopt;
  }
  auto decoded = core::DecodeBase64(authorization.substr(kBasic.size()));
  if (!decoded) return std::nullopt;
  size_t colon = decoded->find(':');
  // crypt_r reads a C string: "pass\0junk" must not pass as "pass".
  if (colon == std::string::npos || decoded->find('\0') != std::string::npos) return std::nullopt;
  return Credential{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

std::pair<const std::string*, std::string> BasicAuth::KeyOf(const Credential& c) const {
  auto it = users_.find(c.user);
  const std::string* hash = it != users_.end() ? &it->second : &dummy_;
  return {hash, core::Sha256().Field(c.user).Field(c.password).Field(*hash).HexDigest()};
}

bool BasicAuth::Allows(std::string_view authorization, bool may_hash) {
  if (!required()) return true;
  auto credential = Parse(authorization);
  return credential && Verify(*credential, may_hash);
}

bool BasicAuth::Decided(std::string_view authorization) {
  if (!required()) return true;
  auto credential = Parse(authorization);
  if (!credential) return true;
  std::string key = KeyOf(*credential).second;
  std::lock_guard<std::mutex> lock(mu_);
  return verified_.contains(key) || refused_.contains(key);
}

bool BasicAuth::Verify(const Credential& c, bool may_hash) {
  const bool known = users_.contains(c.user);
  auto [hash, key] = KeyOf(c);
  auto remembered = [&]() -> std::optional<bool> {
    std::lock_guard<std::mutex> lock(mu_);
    if (verified_.contains(key)) return true;
    if (refused_.contains(key)) return false;
    return std::nullopt;
  };
  if (auto seen = remembered(); seen.has_value()) return *seen;
  if (crypt_ == nullptr || !may_hash) return false;
  std::lock_guard<std::mutex> one_at_a_time(crypt_mu_);
  // Another request with the same user and password may have been hashed
  // while this one waited.
  if (auto seen = remembered(); seen.has_value()) return *seen;
  // crypt_data is 32 KiB: not on a worker's stack.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_(c.password.c_str(), hash->c_str(), data.get());
  // The hash part only (bcrypt's last 31 characters), as Go's bcrypt
  // compares: crypt writes the salt back canonical, and a salt spelled
  // otherwise (bits bcrypt drops set) is the same salt.
  constexpr size_t kHashPart = 31;
  size_t size = hash->size();
  bool ok =
      out != nullptr && std::string_view(out).size() == size && size >= kHashPart &&
      CRYPTO_memcmp(out + size - kHashPart, hash->data() + size - kHashPart, kHashPart) == 0 &&
      known;
  std::lock_guard<std::mutex> lock(mu_);
  Remember(ok ? verified_ : refused_, std::move(key));
  return ok;
}

void BasicAuth::Remember(std::set<std::string>& set, std::string key) {
  // One forgotten at a time (the set's first: a digest, so any), never
  // all: a flood of new wrong passwords cannot make every remembered
  // login cost a hash again at once.
  if (set.size() >= kMaxRemembered) set.erase(set.begin());
  set.insert(std::move(key));
}

}  // namespace mesh::http
