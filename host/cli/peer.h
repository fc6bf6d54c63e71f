// Asking a peer of `mesh-host status` -- a host's /status and /healthz, or
// a Prometheus's HTTP API -- over HTTP or HTTPS, within the command's
// deadline and size cap, and reading what it answers as untrusted text.
//
// Credentials go only where the scheme is https. What went wrong is said in
// words an operator acts on (refused, timed out, not TLS, which certificate
// check failed), never a library's enum name.
#pragma once

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace mesh::cli {

// How `status` reaches a host behind its --web-config.
struct ClientOptions {
  std::string ca;    // PEM of the CA that signed the host's certificate
  std::string cert;  // client certificate and key (client_auth_type)
  std::string key;
  std::string user;  // basic auth
  std::string password;
  // Every answer is whole by then or cut off, whatever the peer does
  // (a byte every few seconds never trips a read timeout); none: no
  // deadline of the command's own.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // An answer larger than this is cut off: /status of 10,000 resources is
  // about 3 MiB.
  size_t max_bytes = size_t{16} << 20;
};

// One request's answer, or why there is none.
struct Answer {
  std::string url;    // the normalised base URL
  std::string error;  // empty: `body` is the whole answer, status 200 (or /healthz's 503)
  int status = 0;     // the HTTP status, when an answer came
  std::string body;   // with an error, what came with another status, if any
};

// The base URL: a trailing "/" or the path of /status itself (what one
// copies from a browser) means the same host.
std::string BaseUrl(const std::string& given);

// What in an http(s) URL (`SCHEME://...`) the client cannot take, in
// words; "" when it can. Checked again before each request.
std::string CheckUrl(const std::string& url);

// What makes `pem`, read from --ca, unusable: "" when it holds at least one
// PEM certificate, else words naming the flag and file. The client loads it
// for every connection and, when it cannot, names no file nor reason.
std::string CheckCaPem(std::string_view pem, const ClientOptions& opts);

// What makes the client certificate and key unusable, in words naming the
// flag and file (never the key's bytes); "" when `cert_pem` holds a
// certificate and `key_pem` its private key. An encrypted key is refused:
// nothing may stop to ask for a passphrase.
std::string CheckClientPair(std::string_view cert_pem, std::string_view key_pem,
                            const ClientOptions& opts);

// GET `path` of the peer at `given`.
Answer Fetch(const std::string& given, const std::string& path, const ClientOptions& opts);

// An http:// URL typed on the command line with --user or --cert: the
// operator meant to send them, and plain http would carry them in the
// clear. Says so on `err` and returns true; nothing is asked. (A targets
// file's plain-http hosts are asked without them instead: one fleet may
// mix both.)
bool RefusesPlainHttp(const std::string& given, const ClientOptions& client, std::ostream& err);

// A JSON answer from the network, or discarded when it is not JSON, nests
// deeper than kMaxAnswerDepth (no answer of a mesh-host or a Prometheus
// nests past a handful) or holds more than kMaxAnswerValues values: 16 MiB
// of "[{},{},...]" parsed whole is some 500 MiB, and 32 hosts are asked at
// once. A mesh-host's /status (pretty-printed) spends 20 bytes or more on
// each value: 10,000 resources are some 70,000 to 450,000 of them.
inline constexpr int kMaxAnswerDepth = 64;
inline constexpr size_t kMaxAnswerValues = size_t{1} << 20;
nlohmann::json ParseAnswer(std::string_view body);
// The same, of an object, keeping only its top-level members named in
// `keys`, each whole: nothing else is built, so that a fleet's row costs
// the few fields it shows, not each answer's tree (a million values parsed
// whole are some 50 MiB, 32 answers at once).
nlohmann::json ParseAnswerMembers(std::string_view body,
                                  std::initializer_list<std::string_view> keys);

// A member of a document from the network, which may be missing or of any
// type: null when absent or null.
const nlohmann::json* Member(const nlohmann::json& j, const char* key);
// Its text, printable and cut at 300 bytes; empty when absent.
std::string Str(const nlohmann::json& j, const char* key);

}  // namespace mesh::cli
