#include "host/cli/peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "host/cli/wire_bytes.h"
#include "host/core/json_depth.h"
#include "host/core/printable.h"
#include "third_party/tls_digests.h"

namespace mesh::cli {
namespace {

// OpenSSL's reason for `tls_error`, "" when there is none.
std::string TlsReason(unsigned long tls_error) {
  // Only on an error path: the strings are not loaded at start.
  OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS, nullptr);
  const char* reason = tls_error != 0 ? ERR_reason_error_string(tls_error) : nullptr;
  return reason != nullptr ? reason : "";
}

// The peer's refusal of this client's certificate, or of its lack of one,
// in words; "" when `reason` is not one. Under TLS 1.3 the peer says so
// after the handshake, as the request is written or its answer read.
std::string ClientRefused(const std::string& reason) {
  if (reason.find("certificate required") != std::string::npos) {
    return "the TLS handshake failed: it asks for a client certificate (--cert, --key)";
  }
  if (reason.find("unknown ca") != std::string::npos ||
      reason.find("bad certificate") != std::string::npos) {
    return "the TLS handshake failed: it does not accept the client certificate";
  }
  return "";
}

// What went wrong with a connection, in words: a timeout is a timeout, a
// TLS failure says which check (httplib's enum names are not words).
// `waited`: the request took the whole read timeout, so the peer went
// silent rather than closed the connection (httplib says Read of both).
std::string Why(httplib::Error error, const httplib::Client& client, const ClientOptions& opts,
                bool https, unsigned long tls_error, std::optional<std::string> waited) {
  if (waited.has_value() &&
      (error == httplib::Error::Read || error == httplib::Error::SSLConnection)) {
    return std::string("it accepted the connection but gave ") +
           (error == httplib::Error::Read ? "no whole answer" : "no TLS handshake") + " within " +
           *waited + ": its process may be stopped or stuck";
  }
  // Under TLS 1.3 a host that wants a client certificate ends the
  // connection once its handshake is over: the request, or the wait for
  // its answer, meets that, and the reason is not always read.
  std::string unsure;
  // A host that speaks TLS alone reads a plain request as no handshake.
  std::string tls_only =
      https ? "" : ": a host that speaks TLS closes a plain http request so: https://";
  if (error == httplib::Error::Read || error == httplib::Error::Write) {
    if (std::string refused = ClientRefused(TlsReason(tls_error)); !refused.empty()) return refused;
    if (https && opts.cert.empty()) {
      unsure =
          " (over TLS with no client certificate: a host that asks for one (--cert, --key) "
          "ends the connection so)";
    }
  }
  switch (error) {
    case httplib::Error::Connection:
      return "nothing answers there (connection refused: is `mesh-host run` listening on that "
             "address and port?)";
    case httplib::Error::ConnectionTimeout:
      return "no connection within the connect timeout (the machine is down, or a firewall "
             "drops the packets)";
    case httplib::Error::Read:
      // Not waited out (that is said above): closed.
      return "it accepted the connection and closed it with no whole answer" + unsure + tls_only;
    case httplib::Error::Write:
      return "the connection closed while the request was sent" + unsure + tls_only;
    case httplib::Error::SSLLoadingCerts:
      return "the --ca, --cert or --key file cannot be loaded";
    case httplib::Error::SSLServerVerification: {
      long code = client.get_openssl_verify_result();
      std::string what = code != X509_V_OK ? X509_verify_cert_error_string(code)
                                           : "its name is not the one in its certificate";
      return "its TLS certificate does not verify against " +
             (opts.ca.empty() ? std::string("the system's CAs (give --ca)") : "--ca " + opts.ca) +
             ": " + what;
    }
    case httplib::Error::SSLConnection: {
      std::string reason = TlsReason(tls_error);
      if (reason.find("wrong version number") != std::string::npos ||
          reason.find("packet length too long") != std::string::npos ||
          reason.find("http request") != std::string::npos) {
        return "the TLS handshake failed: it does not speak TLS";
      }
      if (std::string refused = ClientRefused(reason); !refused.empty()) return refused;
      return "the TLS handshake failed" + (reason.empty() ? "" : " (" + reason + ")");
    }
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

std::string CheckClientPair(std::string_view cert_pem, std::string_view key_pem,
                            const ClientOptions& opts) {
  // -1, not 0: OpenSSL reads 0 as the empty passphrase, and would take a key
  // encrypted with it, which the client then asks for on the terminal.
  auto no_passphrase = [](char*, int, int, void*) { return -1; };
  auto memory = [](std::string_view pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  };
  auto cert_text = memory(cert_pem);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      cert_text ? PEM_read_bio_X509(cert_text.get(), nullptr, no_passphrase, nullptr) : nullptr,
      &X509_free);
  auto key_text = memory(key_pem);
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      key_text ? PEM_read_bio_PrivateKey(key_text.get(), nullptr, no_passphrase, nullptr) : nullptr,
      &EVP_PKEY_free);
  bool pair = cert != nullptr && key != nullptr && X509_check_private_key(cert.get(), key.get());
  ERR_clear_error();
  if (cert == nullptr) return "--cert " + core::Printable(opts.cert) + ": no PEM certificate in it";
  if (key == nullptr) {
    return "--key " + core::Printable(opts.key) +
           ": no PEM private key in it (an encrypted key is not read: nothing asks for its "
           "passphrase)";
  }
  if (!pair) {
    return "--key " + core::Printable(opts.key) + " is not the key of the certificate in --cert " +
           core::Printable(opts.cert);
  }
  return "";
}

std::string CheckCaPem(std::string_view pem, const ClientOptions& opts) {
  std::unique_ptr<BIO, decltype(&BIO_free)> text(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      text ? PEM_read_bio_X509(text.get(), nullptr, nullptr, nullptr) : nullptr, &X509_free);
  ERR_clear_error();
  if (cert == nullptr) {
    return "--ca " + core::Printable(opts.ca) +
           ": no PEM certificate in it (the CA's certificate, \"-----BEGIN CERTIFICATE-----\")";
  }
  return "";
}

namespace {

// Why `url` (BaseUrl of `given`) is not asked; "" when it is.
std::string UrlRefused(const std::string& given, const std::string& url) {
  if (url.find("://") == std::string::npos) {
    return "--url " + core::Printable(given) + ": not a URL; it takes http://HOST:PORT";
  }
  // httplib throws for a scheme it does not know: checked here, never thrown.
  if (!url.starts_with("https://") && !url.starts_with("http://")) {
    return core::Printable(url) + ": not an http:// or https:// URL";
  }
  if (std::string why = CheckUrl(url); !why.empty()) {
    std::string shown = url.substr(0, url.find("://") + 3) + "...";
    // Not the URL itself when it carries a password.
    if (url.find('@') == std::string::npos) shown = core::Printable(url);
    return shown + ": " + why;
  }
  return "";
}

// `limit`, in words, when the request took it all since `began`.
std::optional<std::string> WaitedOut(std::chrono::steady_clock::time_point began,
                                     std::chrono::nanoseconds limit) {
  if (std::chrono::steady_clock::now() - began < limit - std::chrono::milliseconds(100)) {
    return std::nullopt;
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", std::chrono::duration<double>(limit).count());
  return seconds;
}

}  // namespace

std::string BaseUrl(const std::string& given) {
  std::string url = given;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/status")) url.resize(url.size() - std::string_view("/status").size());
  return url;
}

namespace {

// What one GET brought: the body as far as it was read, and which bound, if
// any, ended it.
struct Got {
  httplib::Result result{nullptr, httplib::Error::Unknown};
  std::string received;
  bool too_large = false;
  bool too_much_read = false;  // off the wire, the head too (the watcher's)
  bool timed_out = false;
  unsigned long tls_error = 0;  // what the handshake left on this thread's queue
};

// Read off the wire beyond the body's cap: headers, chunk and TLS framing.
constexpr uint64_t kWireSlack = uint64_t{1} << 20;

// `path` of `client`, its body cut at opts.max_bytes and the whole request
// at opts.deadline: at the deadline, or once more than the cap and
// kWireSlack was read off the wire (httplib bounds neither a header line
// nor the number of headers), a watcher thread shuts the request's
// sockets down under it (the connect, the TLS handshake or the read then
// returns). Not httplib's stop(): it waits for the lock httplib holds
// through the whole TLS handshake, which a peer sending a byte now and
// then keeps going for hours. Each socket is duplicated as it is made, so
// the watcher never touches a descriptor number another thread may have
// been given since.
Got GetBounded(httplib::Client& client, const std::string& path, const ClientOptions& opts) {
  Got got;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::vector<int> sockets;  // duplicates, closed here at the end
  client.set_socket_options([&](int sock) {
    int dup = ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return;
    std::lock_guard<std::mutex> lock(mu);
    sockets.push_back(dup);
  });
  const uint64_t wire_cap = opts.max_bytes + kWireSlack;
  std::thread watch([&] {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
      if (opts.deadline.has_value()) next = std::min(next, *opts.deadline);
      if (cv.wait_until(lock, next, [&] { return done; })) return;
      uint64_t read = 0;
      for (int sock : sockets) read += TcpBytesReceived(sock);
      got.too_much_read = read > wire_cap;
      got.timed_out = !got.too_much_read && opts.deadline.has_value() &&
                      std::chrono::steady_clock::now() >= *opts.deadline;
      if (got.too_much_read || got.timed_out) break;
    }
    // Again until the request ends: a socket made after a shutdown
    // (the next address of the name) is shut down too.
    do {
      for (int sock : sockets) ::shutdown(sock, SHUT_RDWR);
    } while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; }));
  });
  ERR_clear_error();
  got.result = client.Get(path, [&](const char* data, size_t n) {
    if (got.received.size() + n > opts.max_bytes) {
      got.too_large = true;
      return false;
    }
    got.received.append(data, n);
    return true;
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  got.tls_error = ERR_peek_last_error();
  cv.notify_one();
  watch.join();
  got.too_large = got.too_large || got.too_much_read;
  for (int sock : sockets) ::close(sock);
  client.set_socket_options(nullptr);  // it names this frame's `sockets`
  return got;
}

// A TLS handshake that failed without a reason on OpenSSL's queue (the
// peer answered something that is not TLS and closed): whether the same
// address answers a plain-http request, within a second and the deadline,
// read no further than 64 KiB. `addresses`: the host name's address asked
// (httplib's hostname map), empty when httplib looked it up.
bool AnswersPlainHttp(const std::string& https_url, const ClientOptions& opts,
                      const std::map<std::string, std::string>& addresses) {
  ClientOptions plain_opts;
  plain_opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  if (opts.deadline.has_value())
    plain_opts.deadline = std::min(*plain_opts.deadline, *opts.deadline);
  plain_opts.max_bytes = 64 << 10;
  auto budget = *plain_opts.deadline - std::chrono::steady_clock::now();
  if (budget <= std::chrono::nanoseconds(0)) return false;
  httplib::Client plain("http://" + https_url.substr(std::string_view("https://").size()));
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(budget);
  plain.set_connection_timeout(us);
  plain.set_read_timeout(us);
  plain.set_hostname_addr_map(addresses);
  Got got = GetBounded(plain, "/healthz", plain_opts);
  return static_cast<bool>(got.result) || got.too_large;
}

}  // namespace

// What in an http(s) URL the client cannot take, in words; "" when it
// can. httplib's own pattern takes what it does not match (an IPv6 address
// with letters, a query) for a host name, whose lookup then fails as
// "refused"; and it throws on a port beyond an int.
std::string CheckUrl(const std::string& url) {
  std::string_view rest(url);
  rest.remove_prefix(rest.find("://") + 3);
  size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return "credentials in the URL are not taken (--user, and the password in --password-file "
           "or MESH_HOST_PASSWORD)";
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return "a query or fragment in the URL is not taken (give SCHEME://HOST:PORT[/PATH])";
  }
  if (authority.empty()) return "no host";
  std::optional<std::string_view> port;
  if (authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return "an IPv6 address without its closing ]";
    if (authority.substr(1, close - 1).find_first_not_of("0123456789:") != std::string_view::npos) {
      return "an IPv6 address with letters is not taken here (give a host name for it)";
    }
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "not HOST:PORT";
    if (!after.empty()) port = after.substr(1);
  } else if (size_t colon = authority.find(':'); colon != std::string_view::npos) {
    if (colon != authority.rfind(':')) return "an IPv6 address goes in brackets ([ADDRESS]:PORT)";
    port = authority.substr(colon + 1);
  }
  if (port.has_value()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port->data(), port->data() + port->size(), value);
    if (port->empty() || ec != std::errc() || end != port->data() + port->size() || value == 0 ||
        value > 65535) {
      return "the port must be a number from 1 to 65535";
    }
  }
  return "";
}

namespace {

// Why an answer other than 200 (or /healthz's 503) is not one, in words.
std::string Answered(const Answer& p, const std::string& path, bool https,
                     const ClientOptions& opts) {
  std::string error = core::Printable(p.url) + path + " answered " + std::to_string(p.status);
  if (p.status != 401) return error;
  return error + (!https && !opts.user.empty()
                      ? ": it asks for a user, and credentials are sent only over https (give "
                        "it \"__scheme__\": \"https\" in the targets file)"
                  : opts.user.empty() ? ": it asks for a user (--user, and the password in "
                                        "--password-file or MESH_HOST_PASSWORD)"
                                      : ": user " + core::Printable(opts.user) +
                                            " and that password are not accepted");
}

// The host part of `server` (SCHEME://HOST[:PORT]) looked up before
// `deadline`: its addresses, or why not. None (and no error) for an
// address, or without a deadline: httplib then resolves it itself.
struct Resolved {
  std::string host;
  std::vector<std::string> addresses;  // numeric, in the resolver's order
  std::string why;                     // "" when resolved
};

// httplib resolves with a blocking getaddrinfo, which a resolver that does
// not answer holds for its own timeouts (5 s a try, a try a search
// domain): past --timeout, and no socket to shut down under it. Looked up
// here instead, on a thread of its own that is left to finish when the
// deadline passes (not getaddrinfo_a: its timed wait can leave glibc a
// pointer into a stack that is gone, and its 20 threads are shared by
// every worker); httplib is then given each address in turn, and looks up
// nothing.
Resolved ResolveWithin(const std::string& server,
                       std::optional<std::chrono::steady_clock::time_point> deadline) {
  Resolved r;
  r.host = server.substr(server.find("://") + 3);
  if (r.host.starts_with("[")) return r;  // an IPv6 address
  r.host = r.host.substr(0, r.host.find(':'));
  unsigned char addr[sizeof(struct in_addr)];
  if (::inet_pton(AF_INET, r.host.c_str(), addr) == 1 || !deadline.has_value()) return r;
  struct Lookup {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<std::string> addresses;
  };
  auto lookup = std::make_shared<Lookup>();
  std::thread([lookup, host = r.host] {
    struct addrinfo hints {};
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo* found = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
    std::vector<std::string> addresses;
    for (struct addrinfo* a = found; a != nullptr; a = a->ai_next) {
      char name[NI_MAXHOST];
      if (::getnameinfo(a->ai_addr, a->ai_addrlen, name, sizeof name, nullptr, 0, NI_NUMERICHOST) ==
              0 &&
          std::find(addresses.begin(), addresses.end(), name) == addresses.end()) {
        addresses.emplace_back(name);
      }
    }
    if (found != nullptr) ::freeaddrinfo(found);
    std::lock_guard<std::mutex> lock(lookup->mu);
    lookup->done = true;
    lookup->rc = rc;
    lookup->addresses = std::move(addresses);
    lookup->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(lookup->mu);
  if (!lookup->cv.wait_until(lock, *deadline, [&] { return lookup->done; })) {
    r.why = "the name " + core::Printable(r.host) +
            " did not resolve before the deadline (--timeout): is a DNS server answering?";
  } else if (lookup->rc != 0 || lookup->addresses.empty()) {
    r.why = "the name " + core::Printable(r.host) + " does not resolve (" +
            (lookup->rc != 0 ? ::gai_strerror(lookup->rc) : "no address") + ")";
  } else {
    r.addresses = std::move(lookup->addresses);
  }
  return r;
}

// GetBounded at each of `resolved`'s addresses in turn until one takes the
// connection (one that refuses, or does not answer within the connect
// timeout, is passed for the next while the deadline allows), as httplib
// tries those of a name it looks up itself; at the
// name as given when there are none. `asked`: the last address asked, as
// httplib's hostname map. Each connect waits at most `connect`, and under
// a deadline at most an even share of the time left among the addresses
// not yet asked: one that drops packets does not spend the next one's turn.
Got GetFromEach(httplib::Client& client, const Resolved& resolved, const std::string& path,
                const ClientOptions& opts, std::chrono::nanoseconds connect,
                std::map<std::string, std::string>& asked) {
  for (size_t i = 0;; ++i) {
    if (i < resolved.addresses.size()) {
      asked = {{resolved.host, resolved.addresses[i]}};
      client.set_hostname_addr_map(asked);
    }
    std::chrono::nanoseconds wait = connect;
    if (opts.deadline.has_value()) {
      const size_t n = resolved.addresses.size();
      const int64_t unasked = i < n ? static_cast<int64_t>(n - i) : 1;
      wait = std::min<std::chrono::nanoseconds>(
          wait, (*opts.deadline - std::chrono::steady_clock::now()) / unasked);
      wait = std::max(wait, std::chrono::nanoseconds(std::chrono::milliseconds(1)));
    }
    client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(wait));
    Got got = GetBounded(client, path, opts);
    if (i + 1 >= resolved.addresses.size() || got.too_large || got.timed_out || got.result ||
        (got.result.error() != httplib::Error::Connection &&
         got.result.error() != httplib::Error::ConnectionTimeout)) {
      return got;
    }
  }
}

}  // namespace

Answer Fetch(const std::string& given, const std::string& path, const ClientOptions& opts) {
  Answer p;
  p.url = BaseUrl(given);
  if (p.error = UrlRefused(given, p.url); !p.error.empty()) return p;
  bool https = p.url.starts_with("https://");
  // Credentials go only where the scheme is https: a plain-http target of
  // a mixed fleet is asked without them (RefusesPlainHttp keeps an http
  // URL typed with --user from being asked at all).
  if (https) third_party::RegisterTlsDigests();
  // A path is a prefix of every request (a Prometheus API served under
  // /prometheus, a host behind a proxy's path): httplib's client takes
  // only SCHEME://HOST:PORT.
  size_t path_at = p.url.find('/', p.url.find("://") + 3);
  std::string server = p.url.substr(0, path_at);
  std::string prefix = path_at == std::string::npos ? "" : p.url.substr(path_at);
  httplib::Client client(server, https ? opts.cert : "", https ? opts.key : "");
  if (!client.is_valid()) {  // then httplib sends nothing, and says "Success"
    p.error = core::Printable(p.url) + " unreachable: not asked: --cert or --key cannot be used";
    return p;
  }
  if (https && !opts.ca.empty()) client.set_ca_cert_path(opts.ca);
  client.enable_server_certificate_verification(true);
  if (https && !opts.user.empty()) client.set_basic_auth(opts.user, opts.password);
  std::chrono::nanoseconds connect = std::chrono::seconds(3), read = std::chrono::seconds(5);
  if (opts.deadline.has_value()) {
    auto left = *opts.deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) {
      p.error = core::Printable(p.url) + " unreachable: not asked: the deadline (--timeout) passed";
      return p;
    }
    read = std::min(read, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
  }
  Resolved resolved = ResolveWithin(server, opts.deadline);
  if (!resolved.why.empty()) {
    p.error = core::Printable(p.url) + " unreachable: " + resolved.why;
    return p;
  }
  client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(read));
  std::map<std::string, std::string> asked;
  auto began = std::chrono::steady_clock::now();
  Got got = GetFromEach(client, resolved, prefix + path, opts, connect, asked);
  const httplib::Result& res = got.result;
  // The TLS handshake is waited for as long as the connection, the answer
  // for the read timeout. Of one address only: the time of several is not
  // the last one's.
  std::optional<std::string> waited;
  if (resolved.addresses.size() <= 1) {  // none: a numeric address, asked as given
    waited =
        WaitedOut(began, !res && res.error() == httplib::Error::SSLConnection ? connect : read);
  }
  if (!got.too_large && !res && res.error() == httplib::Error::SSLConnection && !got.timed_out &&
      AnswersPlainHttp(server, opts, asked)) {
    p.error = core::Printable(p.url) +
              " unreachable: the TLS handshake failed: it does not speak TLS (it answers plain "
              "http: \"__scheme__\": \"http\" in the targets file)";
    return p;
  }
  // A body cut at the deadline reads as whole to httplib: it is not.
  if (got.too_large || got.timed_out || !res) {
    std::string why =
        got.too_large ? "its answer is larger than " + std::to_string(opts.max_bytes >> 20) +
                            " MiB (cut off there)"
        : got.timed_out ? "no whole answer before the deadline (--timeout)"
                        : Why(res.error(), client, opts, https, got.tls_error, waited);
    p.error = core::Printable(p.url) + " unreachable: " + why;
    return p;
  }
  p.status = res->status;
  if (res->status != 200 && !(path == "/healthz" && res->status == 503)) {
    p.error = Answered(p, path, https, opts);
  }
  p.body = std::move(got.received);
  return p;
}

bool RefusesPlainHttp(const std::string& given, const ClientOptions& client, std::ostream& err) {
  if (!BaseUrl(given).starts_with("http://") || (client.user.empty() && client.cert.empty())) {
    return false;
  }
  err << "mesh-host: " << core::Printable(BaseUrl(given))
      << ": refusing to send a password or client certificate over plain http (use "
         "https://, or \"__scheme__\": \"https\" in the targets file)\n";
  return true;
}

nlohmann::json ParseAnswer(std::string_view body) {
  // Printing a value of the document recurses once a level.
  if (!core::JsonWithin(body, kMaxAnswerDepth, kMaxAnswerValues)) {
    return nlohmann::json::value_t::discarded;
  }
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json ParseAnswerMembers(std::string_view body,
                                  std::initializer_list<std::string_view> keys) {
  if (!core::JsonWithin(body, kMaxAnswerDepth, kMaxAnswerValues)) {
    return nlohmann::json::value_t::discarded;
  }
  // nlohmann's callback: a container or value it says no to is not built,
  // nor anything inside it. Depth 1 is the top-level object's members.
  bool kept = false;  // the top-level member being read is one of `keys`
  auto only = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (depth == 0) return true;  // the document itself, opened and closed
    if (depth == 1 && event == Event::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      kept = std::find(keys.begin(), keys.end(), key) != keys.end();
    }
    return kept;
  };
  return nlohmann::json::parse(body, only, /*allow_exceptions=*/false);
}

const nlohmann::json* Member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string Str(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = Member(j, key);
  if (v == nullptr) return "";
  if (v->is_string()) return core::Printable(v->get_ref<const std::string&>(), 300);
  return core::Printable(v->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 300);
}

}  // namespace mesh::cli
