// HTTP basic auth against the web config's bcrypt hashes.
//
// bcrypt is slow on purpose (tens of milliseconds at cost 10): a user and
// password that verified are remembered (as a SHA-256, never in clear), so
// Prometheus's scrape every 15 seconds does not pay it each time. An
// unknown user costs the same bcrypt as a known one, so timing does not
// tell which users exist.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

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

  // No users configured: everything is allowed.
  bool required() const { return !users_.empty(); }
  // `authorization`: the request's Authorization header ("" when absent).
  bool Allows(std::string_view authorization);

 private:
  bool Verify(const std::string& user, const std::string& password);

  const std::map<std::string, std::string> users_;
  const Crypt crypt_;
  // What an unknown user is checked against: a configured hash, so the
  // cost (and the time) is that of a real user.
  std::string dummy_;
  std::mutex mu_;
  std::set<std::string> verified_;  // SHA-256 of user, password and hash
};

}  // namespace mesh::http
