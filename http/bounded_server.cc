#include "http/bounded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace mesh::http {
namespace {

using Clock = std::chrono::steady_clock;

// Set while the accepting thread runs a connection it has no room for: the
// job httplib hands the queue is opaque, so the connection learns it is to
// be closed unserved from here.
thread_local bool turning_away = false;

// Waits for `events` on `sock` until `deadline`; false on timeout or error.
bool WaitFor(int sock, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{sock, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    return (p.revents & (events | POLLHUP)) != 0 && (p.revents & POLLNVAL) == 0;
  }
}

void Address(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  int rc = peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                : ::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    port = ntohs(in6->sin6_port);
  }
  ip = buf;
}

}  // namespace

namespace {

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Whether Accept-Encoding offers gzip: with a weight above 0 (RFC 9110
// 12.5.3: "gzip;q=0" refuses it), by name, or by "*" when gzip is not named.
bool OffersGzip(const httplib::Headers& headers) {
  std::optional<bool> named, any;
  auto [from, to] = headers.equal_range("Accept-Encoding");
  for (auto it = from; it != to; ++it) {
    std::string_view list = it->second;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view item = list.substr(0, comma);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
      size_t semi = item.find(';');
      std::string_view coding = Trim(item.substr(0, semi));
      std::string_view param = semi == std::string_view::npos ? "" : Trim(item.substr(semi + 1));
      // q=0, 0.0, 0.000: refused; any other weight, or none, offers it.
      std::string_view q = param.starts_with("q=") || param.starts_with("Q=")
                               ? Trim(param.substr(2))
                               : std::string_view("1");
      bool weighted = !(q.starts_with("0") && q.find_first_not_of("0.") == std::string_view::npos);
      if (coding.size() == 4 && strncasecmp(coding.data(), "gzip", 4) == 0) {
        named = weighted;
      } else if (coding == "*") {
        any = weighted;
      }
    }
  }
  return named.value_or(any.value_or(false));
}

// What every request is narrowed to before it is routed:
// - A client that accepts brotli gets gzip or nothing: httplib compresses
//   with brotli's slowest quality, 3.9 s of CPU for /status of 10,000
//   resources (gzip: 63 ms), and browsers offer it by default.
// - No byte ranges: every page is small or made whole for each picture,
//   and httplib does not check a range against the length of a body that
//   a content provider sends (/status): a range past its end would read
//   past the text or keep a worker asking for bytes that never come.
void NarrowRequest(httplib::Request& req) {
  bool gzip = OffersGzip(req.headers);
  auto [from, to] = req.headers.equal_range("Accept-Encoding");
  req.headers.erase(from, to);
  if (gzip) req.headers.emplace("Accept-Encoding", "gzip");
  req.ranges.clear();
  req.headers.erase("Range");
}

}  // namespace

// A fixed pool of workers that counts every connection it holds, queued or
// served; one over the limit is run at once on the accepting thread, as
// "turning away" (closed unserved), so it never waits holding a descriptor.
class BoundedServer::Queue : public httplib::TaskQueue {
 public:
  Queue(const ConnectionLimits& limits, std::function<void()> on_idle)
      : max_(limits.max_connections), on_idle_(std::move(on_idle)) {
    for (size_t i = 0; i < limits.workers; ++i) threads_.emplace_back([this] { Work(); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (open_ < max_) {
        ++open_;
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    turning_away = true;
    fn();
    turning_away = false;
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> fn;
      bool closing = false;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and every accepted one closed
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        closing = stopping_;
      }
      // Stopping: a connection still queued is closed unserved, not given
      // its full deadlines (the daemon's stop would wait on them).
      turning_away = closing;
      fn();
      turning_away = false;
      bool idle = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        idle = --open_ == 0;
      }
      if (idle && on_idle_) on_idle_();
    }
  }

  const size_t max_;
  const std::function<void()> on_idle_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  size_t open_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// The socket as httplib's parser reads it, within the connection's budget.
class BoundedServer::LimitedStream : public httplib::Stream {
 public:
  // `ssl`: the connection's TLS session, its handshake done (null: plain).
  LimitedStream(int sock, const ConnectionLimits& limits, SSL* ssl = nullptr)
      : sock_(sock),
        ssl_(ssl),
        limits_(limits),
        ends_(Clock::now() + limits.connection),
        budget_(limits.bytes_per_connection) {}

  // Waits for the next request's first byte; then it has `request_head` to
  // arrive whole.
  bool NextRequest(std::chrono::milliseconds wait) {
    if (!Pending() && !WaitFor(sock_, POLLIN, std::min(Clock::now() + wait, ends_))) return false;
    head_ends_ = std::min(Clock::now() + limits_.request_head, ends_);
    return true;
  }
  bool exhausted() const { return exhausted_; }

  bool is_readable() const override { return Pending() || WaitFor(sock_, POLLIN, head_ends_); }
  bool is_writable() const override { return WaitFor(sock_, POLLOUT, WriteDeadline()); }
  ssize_t read(char* ptr, size_t size) override {
    if (budget_ == 0 || (!Pending() && !WaitFor(sock_, POLLIN, head_ends_))) {
      exhausted_ = true;
      return -1;
    }
    if (ssl_ != nullptr) {
      ssize_t n =
          TlsIo([&] { return SSL_read(ssl_, ptr, static_cast<int>(std::min(size, budget_))); },
                head_ends_);
      if (n > 0) budget_ -= static_cast<size_t>(n);
      return n;
    }
    for (;;) {
      ssize_t n = ::recv(sock_, ptr, std::min(size, budget_), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) budget_ -= static_cast<size_t>(n);
      return n;
    }
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!WaitFor(sock_, POLLOUT, WriteDeadline())) return -1;
    if (ssl_ != nullptr) {
      return TlsIo(
          [&] { return SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 20))); },
          WriteDeadline());
    }
    for (;;) {
      // Never blocks: a client reading slowly is waited for only until the
      // write deadline, itself within the connection's life.
      ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!WaitFor(sock_, POLLOUT, WriteDeadline())) return -1;
        continue;
      }
      return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // The TLS handshake, within the time a request head has.
  static bool Handshake(int sock, SSL* ssl, std::chrono::milliseconds within) {
    auto deadline = Clock::now() + within;
    for (;;) {
      int rc = SSL_accept(ssl);
      if (rc == 1) return true;
      int err = SSL_get_error(ssl, rc);
      if (err == SSL_ERROR_WANT_READ && WaitFor(sock, POLLIN, deadline)) continue;
      if (err == SSL_ERROR_WANT_WRITE && WaitFor(sock, POLLOUT, deadline)) continue;
      return false;
    }
  }

 private:
  // Bytes OpenSSL already decrypted: there is no socket event for them.
  bool Pending() const { return ssl_ != nullptr && SSL_pending(ssl_) > 0; }

  // One SSL_read or SSL_write on the non-blocking socket, retried as
  // OpenSSL asks until `deadline`.
  template <typename Op>
  ssize_t TlsIo(Op op, Clock::time_point deadline) {
    for (;;) {
      int n = op();
      if (n > 0) return n;
      int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_WANT_READ && WaitFor(sock_, POLLIN, deadline)) continue;
      if (err == SSL_ERROR_WANT_WRITE && WaitFor(sock_, POLLOUT, deadline)) continue;
      if (err == SSL_ERROR_ZERO_RETURN) return 0;
      exhausted_ = err != SSL_ERROR_SYSCALL || n != 0;
      return -1;
    }
  }

  Clock::time_point WriteDeadline() const { return std::min(Clock::now() + limits_.write, ends_); }
  int sock_;
  SSL* ssl_;
  const ConnectionLimits& limits_;
  Clock::time_point ends_;
  Clock::time_point head_ends_ = Clock::time_point::min();
  size_t budget_;
  bool exhausted_ = false;
};

BoundedServer::BoundedServer(ConnectionLimits limits, std::function<void()> on_idle)
    : limits_(limits), on_idle_(std::move(on_idle)) {
  new_task_queue = [this] { return new Queue(limits_, on_idle_); };
  // Not httplib's default, which adds SO_REUSEPORT: with it, a second
  // daemon binds the same port and the kernel splits requests between the
  // two. A port in use must be an error at start.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

void BoundedServer::SetTls(std::shared_ptr<const TlsContext> tls) {
  std::lock_guard<std::mutex> lock(tls_mu_);
  tls_ = std::move(tls);
}

std::shared_ptr<const TlsContext> BoundedServer::Tls() const {
  std::lock_guard<std::mutex> lock(tls_mu_);
  return tls_;
}

namespace {
struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
}  // namespace

bool BoundedServer::process_and_close_socket(socket_t sock) {
  bool served = false;
  // A response goes out as two writes, its head and then its body (/status
  // from a content provider): with Nagle's algorithm the body waits for the
  // client's delayed acknowledgement of the head, 40 ms.
  int yes = 1;
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  // Held for the connection: a reload may replace it meanwhile.
  std::shared_ptr<const TlsContext> tls = turning_away ? nullptr : Tls();
  std::unique_ptr<SSL, SslFree> ssl;
  if (tls != nullptr) {
    // OpenSSL's reads and writes never block: deadlines are polled for.
    ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
    ssl.reset(SSL_new(tls->get()));
    if (ssl == nullptr || SSL_set_fd(ssl.get(), sock) != 1 ||
        !LimitedStream::Handshake(sock, ssl.get(), limits_.request_head)) {
      ++cut_;
      ssl.reset();
      ::shutdown(sock, SHUT_RDWR);
      ::close(sock);
      return false;
    }
  }
  if (turning_away) {
    ++turned_away_;
  } else {
    LimitedStream stream(sock, limits_, ssl.get());
    for (size_t n = 0; n < limits_.requests_per_connection; ++n) {
      if (!stream.NextRequest(n == 0 ? limits_.request_head : limits_.idle)) break;
      bool closed = false;
      bool last = n + 1 == limits_.requests_per_connection;
      bool answered = process_request(stream, last, closed, NarrowRequest);
      // A request cut short is answered 400 by httplib, which would then
      // wait for the next one on the same connection: that is the slow
      // client's way back in, so the connection ends here.
      if (!answered || closed || stream.exhausted()) break;
      served = true;
    }
    if (stream.exhausted()) ++cut_;
  }
  // Best effort: a close_notify, never waited on.
  if (ssl != nullptr) (void)SSL_shutdown(ssl.get());
  ssl.reset();
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return served;
}

}  // namespace mesh::http
