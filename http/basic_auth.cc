#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>

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

bool BasicAuth::Allows(std::string_view authorization) {
  if (!required()) return true;
  constexpr std::string_view kBasic = "Basic ";
  if (!authorization.starts_with(kBasic)) return false;
  auto decoded = core::DecodeBase64(authorization.substr(kBasic.size()));
  if (!decoded) return false;
  size_t colon = decoded->find(':');
  // crypt_r reads a C string: "pass\0junk" must not pass as "pass".
  if (colon == std::string::npos || decoded->find('\0') != std::string::npos) return false;
  return Verify(decoded->substr(0, colon), decoded->substr(colon + 1));
}

bool BasicAuth::Verify(const std::string& user, const std::string& password) {
  auto it = users_.find(user);
  const std::string hash = it != users_.end() ? it->second : dummy_;
  std::string key = core::Sha256().Field(user).Field(password).Field(hash).HexDigest();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (it != users_.end() && verified_.contains(key)) return true;
  }
  if (crypt_ == nullptr) return false;
  // crypt_data is 32 KiB: not on a worker's stack.
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_(password.c_str(), hash.c_str(), data.get());
  bool ok = out != nullptr && std::string_view(out).size() == hash.size() &&
            CRYPTO_memcmp(out, hash.data(), hash.size()) == 0 && it != users_.end();
  if (ok) {
    std::lock_guard<std::mutex> lock(mu_);
    if (verified_.size() >= kMaxRemembered) verified_.clear();
    verified_.insert(std::move(key));
  }
  return ok;
}

}  // namespace mesh::http
