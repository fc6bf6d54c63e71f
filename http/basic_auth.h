// HTTP basic auth against the web config's bcrypt hashes.
//
// bcrypt is slow on purpose (tens of milliseconds at cost 10, a quarter of
// a second at 12): a user and password that verified, or that failed, are
// remembered (as a SHA-256, never in clear), so Prometheus's scrape every
// 15 seconds does not pay it each time and a client repeating a wrong
// password costs nothing. One hash is computed at a time, as
// exporter-toolkit does: wrong passwords never take more than a core, and
// Decided() lets the server keep the requests that need one apart. An
// unknown user costs the same bcrypt as a known one, so timing does not
// tell which users exist.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "host/core/result.h"

struct crypt_data;

namespace mesh::http {

class BasicAuth {
 public:
  // libxcrypt's crypt_r.
  using Crypt = char* (*)(const char* phrase, const char* setting, struct crypt_data* data);

  // crypt_r, from libcrypt loaded the first time it is asked for: a daemon
  // with no basic_auth_users never maps it (about 80 KiB of its private
  // memory). The error names the library and the loader's reason.
  static core::Result<Crypt> LoadCrypt();

  // `crypt` (LoadCrypt's) checks the users' passwords: needed when there
  // are users; without it, nobody is allowed.
  BasicAuth(std::map<std::string, std::string> users, Crypt crypt);

  const std::map<std::string, std::string>& users() const { return users_; }
  // No users configured: everything is allowed.
  bool required() const { return !users_.empty(); }
  // `authorization`: the request's Authorization header ("" when absent).
  // Without `may_hash`, a user and password not remembered is refused
  // rather than hashed (and not remembered): the server's fast workers
  // never wait for a hash, whatever a request's head made them think.
  bool Allows(std::string_view authorization, bool may_hash = true);
  // Whether Allows() answers this without hashing a password: no users,
  // no or a malformed header, or a user and password remembered.
  bool Decided(std::string_view authorization);

 private:
  struct Credential {
    std::string user;
    std::string password;
  };
  static std::optional<Credential> Parse(std::string_view authorization);
  // The hash `user` is checked against, and the key it is remembered by.
  std::pair<const std::string*, std::string> KeyOf(const Credential& c) const;
  bool Verify(const Credential& c, bool may_hash);
  // Under mu_: remembers `key` in `set`, making room by forgetting one.
  static void Remember(std::set<std::string>& set, std::string key);

  const std::map<std::string, std::string> users_;
  const Crypt crypt_;
  // What an unknown user is checked against: a configured hash, so the
  // cost (and the time) is that of a real user.
  std::string dummy_;
  std::mutex mu_;
  std::set<std::string> verified_;  // SHA-256 of user, password and hash
  std::set<std::string> refused_;   // the same, of those that failed
  std::mutex crypt_mu_;             // one hash at a time
};

}  // namespace mesh::http
