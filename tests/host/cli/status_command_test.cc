#include "host/cli/status_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>
#include <tuple>

#include "host/cli/peer.h"
#include "host/cli/prometheus_status.h"
#include "host/core/printable.h"
#include "third_party/tls_digests.h"

namespace mesh::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// As mesh-host-serve's main sets it (serve_main.cc): OpenSSL writes a TLS
// alert with write(2) to a connection the deadline shut down, and this
// process, the client's, must get EPIPE from it, not die.
const bool kIgnoresSigpipe = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

const char* kStatus = R"({
  "machine": "edge-1", "generation": 42, "declaration_digest": "abc", "healthy": false,
  "last_reconcile": {"started_at": "2026-11-30T04:00:00.000Z", "finished_at": "2026-11-30T04:00:01.000Z",
                     "duration_seconds": 1.0, "result": "failed", "counts": {"failed": 1}},
  "error": null,
  "resources": [
    {"id": "fail2ban.jail", "kind": "file", "outcome": "updated", "detail": "wrote 22 byte(s), mode 0644",
     "applied_at": "x", "digest": "sha256:1"},
    {"id": "fail2ban.service", "kind": "service", "outcome": "failed",
     "detail": "failed (Result=exit-code) 1.0 s after restart, and a long tail that goes on and on past eighty columns",
     "applied_at": "x", "digest": "sha256:2",
     "unit": {"name": "fail2ban.service", "active_state": "failed", "sub_state": "failed",
              "result": "exit-code", "n_restarts": 0, "host_restarts": 3}}]})";

TEST(StatusCommandTest, TableFitsEightyColumnsAndSaysWhatIsWrong) {
  std::string table = FormatStatusTable(nlohmann::json::parse(kStatus));
  EXPECT_THAT(table, HasSubstr("machine edge-1  generation 42"));
  EXPECT_THAT(table, HasSubstr("NOT HEALTHY"));
  EXPECT_THAT(table, HasSubstr("fail2ban.service"));
  EXPECT_THAT(table, HasSubstr("failed/failed"));
  // Issue 40, the table at 3 a.m.: who restarted it, in words; the failing
  // first; the detail whole, wrapped rather than cut at 80 columns.
  EXPECT_THAT(table, HasSubstr("failed/failed      systemd 0, host 3"));
  EXPECT_THAT(table, HasSubstr("failed (Result=exit-code) 1.0 s after restart"));
  EXPECT_LT(table.find("fail2ban.service"), table.find("fail2ban.jail")) << "failing first";
  EXPECT_THAT(table, HasSubstr("\n    and on past eighty columns\n")) << table;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

// A unit declared running that died after its apply: its outcome stays
// the apply's (`unchanged`), and the table kept it in the host's order,
// where the page and /healthz put it first.
TEST(StatusCommandTest, AUnitNotUpIsListedAmongTheFailing) {
  nlohmann::json s = nlohmann::json::parse(kStatus);
  nlohmann::json dead = s["resources"][1];
  dead["id"] = "web";
  dead["outcome"] = "unchanged";
  dead["unit"]["active_state"] = "inactive";
  dead["unit"]["sub_state"] = "dead";
  dead["unit"]["declared_state"] = "running";
  dead["unit"]["up"] = false;
  nlohmann::json up = dead;
  up["id"] = "db";
  up["unit"]["up"] = true;
  s["resources"] = {s["resources"][0], up, dead};
  std::string table = FormatStatusTable(s);
  EXPECT_LT(table.find("\nweb "), table.find("fail2ban.jail")) << table;
  EXPECT_LT(table.find("fail2ban.jail"), table.find("\ndb ")) << table;
}

// Why the host is not healthy when no resource failed: an apply stuck, or
// units the live watch cannot see. Before, the table said NOT HEALTHY and
// showed every unit as it last was, with no word why.
TEST(StatusCommandTest, AStuckApplyAndUnseenUnitsAreSaid) {
  nlohmann::json s = nlohmann::json::parse(kStatus);
  s["apply_stalled"] = nullptr;
  s["units_unseen"] =
      "the units have not been seen for 10.0 s: the live unit watch cannot follow systemd (the bus "
      "connection was lost (Connection reset by peer)); their states shown are the last seen";
  std::string table = FormatStatusTable(s);
  EXPECT_THAT(table, HasSubstr("units unseen: the units have not been seen for 10.0 s"));
  EXPECT_THAT(table, HasSubstr("their states shown are the last seen")) << "whole, wrapped";
  EXPECT_THAT(table, Not(HasSubstr("apply stalled"))) << "null is not said";
  s["apply_stalled"] = "the apply under way has made no progress for 600.0 s";
  EXPECT_THAT(FormatStatusTable(s), HasSubstr("apply stalled: the apply under way has made no"));
  std::istringstream lines(FormatStatusTable(s));
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
  }
}

// What a column cuts is said whole under the row: a crash loop's
// activating/auto-restart (23 characters in a column of 18), a long id. The
// last apply's own error ("record not saved") is said. A failed unit's
// journal lines are shown as whole as the host sent them (240 bytes of the
// run's words, escaped), wrapped, and a hostile peer's are still bounded.
TEST(StatusCommandTest, WhatAColumnCutsAndTheApplysErrorAreSaidWhole) {
  nlohmann::json s = nlohmann::json::parse(kStatus);
  s["last_reconcile"]["error"] = "record not saved: state.json: No space left on device";
  nlohmann::json& unit = s["resources"][1]["unit"];
  unit["active_state"] = "activating";
  unit["sub_state"] = "auto-restart";
  s["resources"][1]["id"] = "a-resource-id-longer-than-its-column.service";
  std::string sent = "jaild[412]: ERROR: " + std::string(200, 'x') + " \\x1b[31m" + "tail";
  unit["journal"] = {{"lines", {sent, std::string(100000, 'y')}}};
  std::string table = FormatStatusTable(s);
  EXPECT_THAT(table,
              HasSubstr("\nlast apply failed: record not saved: state.json: No space left on "
                        "device\n"));
  EXPECT_THAT(table, HasSubstr("\n    unit state activating/auto-restart\n")) << table;
  EXPECT_THAT(table, HasSubstr("\n    id a-resource-id-longer-than-its-column.service\n"));
  std::string joined;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
    if (line.starts_with("    ")) joined += line.substr(4);
  }
  EXPECT_THAT(joined, HasSubstr("[31mtail")) << "the line's end is shown, not cut at 200";
  EXPECT_LT(table.size(), 8000u) << "a hostile line is bounded";

  // A unit the host could not read: said so, not "/" and 0 restarts.
  unit["active_state"] = unit["sub_state"] = unit["result"] = unit["n_restarts"] = nullptr;
  table = FormatStatusTable(s);
  EXPECT_THAT(table, HasSubstr(" not read           systemd ?, host ")) << table;

  // A long refusal, a peer's long key id, a word of many-byte characters:
  // still 80 columns, and never a character cut in two.
  s["error"] = "field x: " + std::string(150, 'r') + " and more words after it";
  s["signature"] = {{"key_id", std::string(120, 'k')}, {"trusted_comment", "generation 42"}};
  std::string accents;
  for (int i = 0; i < 60; ++i) accents += "\u00e9";
  s["resources"][0]["id"] = accents;
  s["signature"]["trusted_comment"] = accents + accents + accents + accents;  // past its lines
  std::string table2 = FormatStatusTable(s);
  std::istringstream wide(table2);
  for (std::string line; std::getline(wide, line);) {
    EXPECT_LE(line.size(), 80u) << line;
    EXPECT_TRUE(core::IsPrintable(line)) << "cut inside a character: " << line;
  }
  // Its row keeps the columns in line: 21 characters and the mark of a cut.
  std::string row;
  for (int i = 0; i < 21; ++i) row += "\u00e9";
  EXPECT_THAT(table2, HasSubstr("\n" + row + "~ file       updated")) << table2;
}

// Issue 39 (8): the trusted comment is verified, so it is shown: who signed
// the generation in force, and what the signer said it is.
TEST(StatusCommandTest, TheSignerAndTheTrustedCommentAreShown) {
  nlohmann::json doc = nlohmann::json::parse(kStatus);
  EXPECT_THAT(FormatStatusTable(doc), Not(HasSubstr("signed by"))) << "unsigned: nothing said";
  doc["signature"] = {{"key_id", "0123456789ABCDEF"},
                      {"trusted_comment", "timestamp:1764806400\tfile:d.json\tedge release 42"}};
  std::string table = FormatStatusTable(doc);
  EXPECT_THAT(table, HasSubstr("\nsigned by key 0123456789ABCDEF\n"));
  EXPECT_THAT(
      table,
      HasSubstr("    trusted comment: timestamp:1764806400\\x09file:d.json\\x09edge release 42\n"))
      << "escaped, as everything a peer sends";
  doc["signature"]["trusted_comment"] = std::string(400, 'x');
  std::istringstream lines(FormatStatusTable(doc));
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
}

// A /status from the network may have any shape: the table is printed, not
// thrown (an uncaught type_error aborted with 134), and nothing it quotes
// reaches the terminal raw.
TEST(StatusCommandTest, AnyShapeOfDocumentIsATableNotACrash) {
  const char* shapes[] = {
      R"({"healthy": "yes", "machine": 7, "generation": "x", "error": 5,
          "last_reconcile": {"duration_seconds": "long", "result": []}, "resources": {}})",
      R"({"healthy": true, "last_reconcile": 3, "resources": [1, "x", null, {"unit": 4}]})",
      R"({"healthy": false, "resources": [{"id": {"a": 1}, "unit": {"n_restarts": "many"}}]})",
      R"({"healthy": false, "error": "bad\nfailed x (file): forged\u001b[2J",
          "resources": [{"id": "a\u0007", "detail": "line\rover"}]})",
  };
  for (const char* shape : shapes) {
    std::string table = FormatStatusTable(nlohmann::json::parse(shape));
    EXPECT_THAT(table, HasSubstr("machine ")) << shape;
    for (char c : table) {
      EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << shape;
    }
  }
  std::string forged = FormatStatusTable(nlohmann::json::parse(shapes[3]));
  EXPECT_THAT(forged, HasSubstr("declaration refused: bad\\x0afailed x (file): forged\\x1b[2J"));
}

TEST(StatusCommandTest, UnreachableIsExit2) {
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://127.0.0.1:1", out, err), 2);
  EXPECT_THAT(
      err.str(),
      HasSubstr("http://127.0.0.1:1 unreachable: nothing answers there "
                "(connection refused: is `mesh-host run` listening on that address and port?)"));
  std::ostringstream out2, err2;
  EXPECT_EQ(RunStatus("127.0.0.1:1", out2, err2), 2);
  EXPECT_THAT(err2.str(), HasSubstr("--url 127.0.0.1:1: not a URL; it takes http://HOST:PORT"));
}

// Issue 20: a trailing "/" or "/status" in --url was "unreachable:
// Connection"; it names the same host.
TEST(StatusCommandTest, TheUrlOfTheStatusPageItselfWorks) {
  httplib::Server server;
  server.Get("/status", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"machine": "m", "generation": 1, "healthy": true, "resources": []})",
                    "application/json");
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  for (std::string suffix : {"", "/", "/status", "/status/"}) {
    std::ostringstream out, err;
    EXPECT_EQ(RunStatus("http://127.0.0.1:" + std::to_string(port) + suffix, out, err), 0)
        << suffix << ": " << err.str();
    EXPECT_THAT(out.str(), HasSubstr("machine m")) << suffix;
  }
  server.stop();
  t.join();
}

// A listening socket on 127.0.0.1, at a port the kernel picks.
int ListenOnLoopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(::listen(fd, 4), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  *port = ntohs(addr.sin_port);
  return fd;
}

// A peer that accepts and then sends its answer's headers a byte every
// 200 ms: each byte is within the read timeout, so only a deadline of the
// command's own ends the wait.
// `head` first, then `piece` again and again.
class TricklingPeer {
 public:
  explicit TricklingPeer(std::string head = "HTTP/1.1 200 OK\r\nX-Slow: ",
                         std::string piece = "a") {
    listener_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this, head = std::move(head), piece = std::move(piece)] {
      int c = ::accept(listener_, nullptr, nullptr);
      if (c < 0) return;
      (void)::send(c, head.data(), head.size(), MSG_NOSIGNAL);
      // At most 60 s: the test is bounded even when the client never gives up.
      for (int i = 0; i < 300 && !stop_; ++i) {
        if (::send(c, piece.data(), piece.size(), MSG_NOSIGNAL) != ssize_t(piece.size())) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      ::close(c);
    });
  }
  ~TricklingPeer() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Issue 39 (4): a target sending a byte every few seconds was still pending
// at 40 s, and an endless body grew the client until bad_alloc. The
// command has a deadline and a cap, and says which one a target hit.
TEST(StatusCommandTest, ATricklingPeerMeetsTheDeadline) {
  TricklingPeer peer;
  ClientOptions opts;
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus(peer.url(), out, err, opts), 2);
  EXPECT_THAT(err.str(), HasSubstr("no whole answer before the deadline (--timeout)"));
}

// --user without a password sent an empty one, and the 401 said "that
// password is not accepted" of a password never given; a ':' in the name
// ends it there in basic auth.
TEST(StatusCommandTest, AUserWithoutAPasswordOrWithAColonIsExit2) {
  ::unsetenv("MESH_HOST_PASSWORD");
  std::string empty = ::testing::TempDir() + "/empty-password";
  std::ofstream(empty) << "\n";
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {"prom", "", "--user prom has no password: give --password-file FILE or MESH_HOST_PASSWORD"},
      {"prom", empty,
       "--user prom has no password: --password-file " + empty + " has an empty first line"},
      {"a:b", "", "has no password"},
  };
  for (const auto& [user, file, says] : cases) {
    ClientOptions opts;
    opts.user = user;
    std::ostringstream out, err;
    EXPECT_EQ(RunStatusVerb({"https://127.0.0.1:1"}, {}, {}, out, err, opts, file,
                            std::chrono::seconds(3)),
              2);
    EXPECT_THAT(err.str(), HasSubstr(says));
    EXPECT_EQ(out.str(), "");
  }
  ::setenv("MESH_HOST_PASSWORD", "secret", 1);
  ClientOptions colon;
  colon.user = "a:b";
  std::ostringstream out, err;
  EXPECT_EQ(
      RunStatusVerb({"https://127.0.0.1:1"}, {}, {}, out, err, colon, "", std::chrono::seconds(3)),
      2);
  EXPECT_THAT(err.str(), HasSubstr("--user: a user name holds no ':'"));
  ::unsetenv("MESH_HOST_PASSWORD");
}

// A host whose process is stopped (kill -STOP) still has its socket accept:
// the wait ran out, yet the words said it closed the connection and hinted
// https://, and over TLS only that the handshake failed.
TEST(StatusCommandTest, APeerSilentForTheReadTimeoutIsSaidSo) {
  for (std::string scheme : {"http://", "https://"}) {
    TricklingPeer silent("", "");
    ClientOptions opts;
    opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::ostringstream out, err;
    std::string url = scheme + silent.url().substr(std::string_view("http://").size());
    EXPECT_EQ(RunStatus(url, out, err, opts), 2);
    EXPECT_THAT(err.str(), HasSubstr(scheme == "http://" ? "gave no whole answer within 5.0 s"
                                                         : "gave no TLS handshake within 3.0 s"));
    EXPECT_THAT(err.str(), HasSubstr("its process may be stopped or stuck"));
    EXPECT_THAT(err.str(), Not(HasSubstr("closed")));
  }
}

// An answer without a length, whose body ends only when the connection
// closes: a whole document, then a space every 200 ms. Cut at the
// deadline, it read as complete, and the host as healthy.
TEST(StatusCommandTest, ABodyCutAtTheDeadlineIsNoWholeAnswer) {
  TricklingPeer peer(
      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\n\r\n"
      R"({"healthy": true, "machine": "m", "generation": 1, "resources": []})",
      " ");
  ClientOptions opts;
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus(peer.url(), out, err, opts), 2) << out.str();
  EXPECT_THAT(err.str(), HasSubstr("no whole answer before the deadline (--timeout)"));
}

// A peer that closed the connection at once was said to have sent "no
// whole answer in time", after 20 ms; a TLS-only host asked over http://
// reads so too, and nothing said to try https://.
TEST(StatusCommandTest, APeerThatClosesAtOnceIsSaidToHaveClosed) {
  int port = 0;
  int listener = ListenOnLoopback(&port);
  std::thread closing([listener] {
    int c = ::accept(listener, nullptr, nullptr);
    if (c < 0) return;
    char request[512];
    (void)::recv(c, request, sizeof request, 0);
    ::close(c);
  });
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://127.0.0.1:" + std::to_string(port), out, err), 2);
  EXPECT_THAT(err.str(),
              HasSubstr("it accepted the connection and closed it with no whole answer"));
  EXPECT_THAT(err.str(), HasSubstr("a host that speaks TLS closes a plain http request so: "
                                   "https://"));
  closing.join();
  ::close(listener);
}

TEST(StatusCommandTest, AnEndlessAnswerIsCutOff) {
  httplib::Server server;
  server.Get("/status", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json",
                                     [](size_t offset, httplib::DataSink& sink) {
                                       std::string chunk(64 * 1024, ' ');
                                       // Bounded for a client that never stops reading: 64 MiB.
                                       if (offset > (size_t{64} << 20)) {
                                         sink.done();
                                         return true;
                                       }
                                       return sink.write(chunk.data(), chunk.size());
                                     });
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  ClientOptions opts;
  opts.max_bytes = size_t{1} << 20;
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://127.0.0.1:" + std::to_string(port), out, err, opts), 2);
  EXPECT_THAT(err.str(), HasSubstr("its answer is larger than 1 MiB (cut off there)"));
  server.stop();
  t.join();
}

// Issue 39 (4), the head: httplib bounds neither a header line nor the
// number of headers, and only the body was cut. A peer sending one header
// line for ever grew the client by some 100 MB a second until its
// deadline, past it to bad_alloc (exit 134) with --timeout 60s.
TEST(StatusCommandTest, AnEndlessHeadIsCutOffToo) {
  int port = 0;
  int listener = ListenOnLoopback(&port);
  std::atomic<size_t> sent{0};
  // The accepted connection, closed here after the join: the peer's sends
  // into a socket the client closed go on succeeding over loopback (some
  // 2 MB a second), so the peer is stopped by shutting it down.
  std::atomic<int> conn{-1};
  std::thread peer([&] {
    int c = ::accept(listener, nullptr, nullptr);
    if (c < 0) return;
    conn = c;
    char request[4096];
    (void)::recv(c, request, sizeof(request), 0);
    const std::string head = "HTTP/1.1 200 OK\r\nX-Endless: ";
    (void)::send(c, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string piece(64 * 1024, 'a');
    while (sent < (size_t{256} << 20)) {  // bounded for a client that never stops
      ssize_t n = ::send(c, piece.data(), piece.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  });
  ClientOptions opts;
  opts.max_bytes = size_t{1} << 20;
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://127.0.0.1:" + std::to_string(port), out, err, opts), 2);
  EXPECT_THAT(err.str(), HasSubstr("its answer is larger than 1 MiB (cut off there)"));
  EXPECT_LT(sent.load(), size_t{32} << 20) << "read far past the cap";
  ::shutdown(listener, SHUT_RDWR);
  if (conn >= 0) ::shutdown(conn, SHUT_RDWR);
  peer.join();
  if (conn >= 0) ::close(conn);
  ::close(listener);
}

// A peer that plays two tricks on an https client, each bounded at 20 s:
// kTlsTrickle reads the ClientHello and answers a TLS record header, then
// one byte of the record every 200 ms (every byte inside the read timeout,
// so only the command's deadline ends the handshake); kPlainEndless
// answers the ClientHello as a plain-http server does, then serves the
// plain-http retry an endless chunked body. `outlasted()`: the peer ran its
// trick to the end (the client never gave up).
class TrickyTlsPeer {
 public:
  enum class Trick { kTlsTrickle, kPlainEndless };
  explicit TrickyTlsPeer(Trick trick) {
    listener_ = ListenOnLoopback(&port_);
    thread_ = std::thread([this, trick] {
      int c = ::accept(listener_, nullptr, nullptr);
      if (c < 0) return;
      char hello[4096];
      (void)::recv(c, hello, sizeof(hello), 0);
      if (trick == Trick::kTlsTrickle) {
        (void)::send(c, "\x16\x03\x03\x40\x00", 5, MSG_NOSIGNAL);
        Trickle(c, "a", std::chrono::milliseconds(200));
        ::close(c);
        return;
      }
      const std::string refused = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      (void)::send(c, refused.data(), refused.size(), MSG_NOSIGNAL);
      ::close(c);
      c = ::accept(listener_, nullptr, nullptr);
      if (c < 0) return;
      (void)::recv(c, hello, sizeof(hello), 0);
      const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      (void)::send(c, head.data(), head.size(), MSG_NOSIGNAL);
      Trickle(c, "10000\r\n" + std::string(0x10000, ' ') + "\r\n", std::chrono::milliseconds(200));
      ::close(c);
    });
  }
  ~TrickyTlsPeer() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  bool outlasted() const { return outlasted_; }

 private:
  void Trickle(int c, const std::string& piece, std::chrono::milliseconds every) {
    for (int i = 0; i < 100; ++i) {
      if (stop_ || ::send(c, piece.data(), piece.size(), MSG_NOSIGNAL) < 0) return;
      std::this_thread::sleep_for(every);
    }
    outlasted_ = true;
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> outlasted_{false};
  std::thread thread_;
};

// A TLS handshake fed a byte at a time held the command past its deadline
// for as long as the peer liked (hours): httplib's stop() waits for the
// lock it holds through the handshake.
TEST(StatusCommandTest, ATricklingTlsHandshakeMeetsTheDeadline) {
  third_party::RegisterTlsDigests();
  TrickyTlsPeer peer(TrickyTlsPeer::Trick::kTlsTrickle);
  ClientOptions opts;
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus(peer.url(), out, err, opts), 2);
  EXPECT_FALSE(peer.outlasted()) << "the command waited out the peer's 20 s";
  EXPECT_THAT(err.str(), HasSubstr("no whole answer before the deadline (--timeout)"));
}

// After a failed handshake the command asks whether the address speaks
// plain http; that answer was read whole, without a cap or a deadline.
TEST(StatusCommandTest, ThePlainHttpRetryIsBoundedToo) {
  third_party::RegisterTlsDigests();
  TrickyTlsPeer peer(TrickyTlsPeer::Trick::kPlainEndless);
  ClientOptions opts;
  opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus(peer.url(), out, err, opts), 2);
  EXPECT_FALSE(peer.outlasted()) << "the retry read the endless answer to its end";
  EXPECT_THAT(err.str(), HasSubstr("it does not speak TLS (it answers plain http"));
}

// A URL httplib cannot take: a port beyond an int threw out of httplib
// (the process aborted); a path became part of the host name, and the
// failed lookup read "connection refused".
TEST(StatusCommandTest, AUrlItCannotTakeIsSaidSo) {
  struct Case {
    const char* url;
    const char* words;
  };
  for (const Case& c : {Case{"http://127.0.0.1:99999999999",
                             "the port must be a number from 1 "
                             "to 65535"},
                        Case{"http://127.0.0.1:0", "the port must be a number from 1 to 65535"},
                        Case{"http://127.0.0.1:80/x?y=1", "a query or fragment in the URL"},
                        Case{"http://[2001:db8::1]:80", "an IPv6 address with letters"},
                        Case{"http://2001:db8::1", "an IPv6 address goes in brackets"},
                        Case{"https://me:hunter2@127.0.0.1:1", "credentials in the URL"}}) {
    std::ostringstream out, err;
    EXPECT_EQ(RunStatus(c.url, out, err, ClientOptions{}), 2) << c.url;
    EXPECT_THAT(err.str(), HasSubstr(c.words)) << c.url;
    EXPECT_THAT(err.str(), Not(HasSubstr("hunter2")));
  }
}

// A stand-in for one mesh-host: /status and /healthz.
class FakeHost {
 public:
  FakeHost(std::string status, int health_code, std::string health,
           const std::string& address = "127.0.0.1") {
    server_.Get("/status", [status](const httplib::Request&, httplib::Response& res) {
      res.set_content(status, "application/json");
    });
    server_.Get("/healthz", [health_code, health](const httplib::Request&, httplib::Response& res) {
      res.status = health_code;
      res.set_content(health, "text/plain");
    });
    port_ = server_.bind_to_any_port(address);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeHost() {
    server_.stop();
    thread_.join();
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// `check(dns)`'s exit code, run in a child process with a network and a
// mount namespace of its own: its loopback up, `dns` a UDP socket on
// 127.0.0.1:53 there, /etc/resolv.conf naming only that (tries of 5 s,
// twice), host names from DNS alone. 77 when the namespaces cannot be
// made (not root); nothing outside the child can take the port.
int WithResolverOnLoopback(const std::function<int(int dns)>& check) {
  std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/resolv.conf") << "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n";
  std::ofstream(dir + "/nsswitch.conf") << "hosts: dns\n";
  pid_t child = ::fork();
  if (child < 0) return 77;
  if (child == 0) {
    if (::unshare(CLONE_NEWNS | CLONE_NEWNET) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount((dir + "/resolv.conf").c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) !=
            0 ||
        ::mount((dir + "/nsswitch.conf").c_str(), "/etc/nsswitch.conf", nullptr, MS_BIND,
                nullptr) != 0) {
      ::_exit(77);
    }
    int sock = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq lo{};
    std::strncpy(lo.ifr_name, "lo", IFNAMSIZ - 1);
    if (::ioctl(sock, SIOCGIFFLAGS, &lo) != 0) ::_exit(125);
    lo.ifr_flags |= IFF_UP;
    if (::ioctl(sock, SIOCSIFFLAGS, &lo) != 0) ::_exit(125);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(53);
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(sock, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) ::_exit(125);
    ::_exit(check(sock));
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 126;
  return WEXITSTATUS(status);
}

// A resolver that does not answer held httplib's blocking getaddrinfo for
// its own timeouts (here 2 tries of 5 s), past --timeout, with no socket
// for the deadline's watcher to shut down.
TEST(StatusCommandTest, ANameThatDoesNotResolveMeetsTheDeadline) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  int wrong = WithResolverOnLoopback([](int) {
    ClientOptions opts;
    opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    auto start = std::chrono::steady_clock::now();
    std::ostringstream out, err;
    int rc = RunStatus("http://mesh-host-test.invalid:9479", out, err, opts);
    auto took = std::chrono::steady_clock::now() - start;
    return (rc != 2 ? 1 : 0) |
           (err.str().find("did not resolve before the deadline") == std::string::npos ? 2 : 0) |
           (took > std::chrono::seconds(4) ? 4 : 0);
  });
  EXPECT_EQ(wrong, 0) << "1: not exit 2, 2: not said, 4: past the deadline by more than 3 s, "
                         "77: no namespace, 125: no loopback or port 53 in it";
}

// Answers on `dns` the first query of each type (A: 127.0.0.2 and
// 127.0.0.3; AAAA: none), then nothing, until `stop`.
void AnswerOnce(int dns, const std::atomic<bool>& stop) {
  bool answered_a = false, answered_aaaa = false;
  while (!stop) {
    pollfd p{dns, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    unsigned char q[512];
    sockaddr_in from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = ::recvfrom(dns, q, sizeof(q), 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 17) continue;
    size_t at = 12;
    while (at < static_cast<size_t>(n) && q[at] != 0) at += q[at] + 1;
    if (at + 5 > static_cast<size_t>(n)) continue;
    int type = q[at + 1] << 8 | q[at + 2];
    bool* answered = type == 1 ? &answered_a : type == 28 ? &answered_aaaa : nullptr;
    if (answered == nullptr || *answered) continue;
    *answered = true;
    std::string a(reinterpret_cast<char*>(q), at + 5);  // the header and the question
    a[2] = static_cast<char>(0x81);
    a[3] = static_cast<char>(0x80);
    a[6] = 0, a[7] = type == 1 ? 2 : 0;  // answers
    a[8] = a[9] = a[10] = a[11] = 0;
    for (char last : {'\x02', '\x03'}) {
      if (type == 1) a += std::string("\xc0\x0c\0\x01\0\x01\0\0\0\x3c\0\x04\x7f\0\0", 15) + last;
    }
    ::sendto(dns, a.data(), a.size(), 0, reinterpret_cast<sockaddr*>(&from), from_len);
  }
}

// A resolver that answers once, then never: the name was looked up within
// the deadline, then again by httplib, unbounded, for the resolver's own
// timeouts. The addresses found the first time are the ones asked, each
// until one answers (nothing listens on 127.0.0.2).
TEST(StatusCommandTest, ANameIsLookedUpOnceWithinTheDeadline) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  int wrong = WithResolverOnLoopback([](int dns) {
    FakeHost host(R"({"machine": "edge-1", "generation": 42, "healthy": true})", 200, "ok\n",
                  "127.0.0.3");
    std::atomic<bool> stop{false};
    std::thread resolver([&] { AnswerOnce(dns, stop); });
    std::string url =
        "http://mesh-host-test.example:" + host.target().substr(host.target().find(':') + 1);
    ClientOptions opts;
    opts.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    auto start = std::chrono::steady_clock::now();
    std::ostringstream out, err;
    int rc = RunStatus(url, out, err, opts);
    auto took = std::chrono::steady_clock::now() - start;
    stop = true;
    resolver.join();
    if (rc != 0) std::cerr << "exit " << rc << ": " << err.str();
    return (rc != 0 ? 1 : 0) | (took > std::chrono::seconds(5) ? 4 : 0);
  });
  EXPECT_EQ(wrong, 0) << "1: not exit 0 (healthy), 4: past the deadline by more than 2 s, "
                         "77: no namespace, 125: no loopback or port 53 in it";
}

// An address that does not answer at all (its SYNs dropped: here a
// listener whose queue is full) is passed for the next once the connect
// timeout (3 s) is spent, as httplib's own lookup did; it stopped there.
// `status` of a name whose first address drops the connection's packets (a
// listener with a full accept queue on 127.0.0.2) and whose second is a
// healthy host, within `budget`: 0 when it said healthy, 1 when not (its
// error printed), 77 with no namespace, 125 with no listener.
int StatusPastASilentAddress(std::chrono::seconds budget) {
  return WithResolverOnLoopback([budget](int dns) {
    FakeHost host(R"({"machine": "edge-1", "generation": 42, "healthy": true})", 200, "ok\n",
                  "127.0.0.3");
    int port = std::stoi(host.target().substr(host.target().find(':') + 1));
    sockaddr_in silent{};
    silent.sin_family = AF_INET;
    silent.sin_port = htons(port);
    silent.sin_addr.s_addr = htonl(0x7f000002);
    int full = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::bind(full, reinterpret_cast<sockaddr*>(&silent), sizeof(silent)) != 0 ||
        ::listen(full, 0) != 0) {
      return 125;
    }
    for (int k = 0; k < 2; ++k) {  // the accept queue, filled
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&silent), sizeof(silent));
    }
    std::atomic<bool> stop{false};
    std::thread resolver([&] { AnswerOnce(dns, stop); });
    ClientOptions opts;
    opts.deadline = std::chrono::steady_clock::now() + budget;
    std::ostringstream out, err;
    int rc = RunStatus("http://mesh-host-test.example:" + std::to_string(port), out, err, opts);
    stop = true;
    resolver.join();
    if (rc != 0) std::cerr << "exit " << rc << ": " << err.str();
    return rc != 0 ? 1 : 0;
  });
}

TEST(StatusCommandTest, AnAddressThatDoesNotAnswerIsPassedForTheNext) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  EXPECT_EQ(StatusPastASilentAddress(std::chrono::seconds(8)), 0)
      << "1: not exit 0 (healthy), 77: no namespace, 125: no listener";
}

// Under a --timeout no longer than the connect timeout (3 s), the silent
// address may take only its share of it, and the next one is still asked.
TEST(StatusCommandTest, ASilentAddressLeavesTheNextItsShareOfAShortDeadline) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  EXPECT_EQ(StatusPastASilentAddress(std::chrono::seconds(3)), 0)
      << "1: not exit 0 (healthy), 77: no namespace, 125: no listener";
}

// A fleet's row reads three members of each answer: the rest is not built
// (a host's answer of a million values, 32 asked at once, cost some 1.5 GB
// parsed whole). What is kept is kept whole; the caps still hold.
TEST(StatusCommandTest, AFleetRowParsesOnlyTheMembersItShows) {
  nlohmann::json doc = ParseAnswerMembers(
      R"({"resources": [{"id": "a", "machine": "no"}], "machine": {"name": ["edge", 1]},
          "healthy": false, "units": {"x": {"machine": "no"}}, "generation": 42})",
      {"healthy", "machine", "generation"});
  EXPECT_EQ(doc, nlohmann::json::parse(
                     R"({"machine": {"name": ["edge", 1]}, "healthy": false, "generation": 42})"));
  EXPECT_TRUE(ParseAnswerMembers("[1, 2]", {"healthy"}).empty());
  EXPECT_TRUE(ParseAnswerMembers("{\"healthy\": true", {"healthy"}).is_discarded());
  EXPECT_TRUE(ParseAnswerMembers(R"({"healthy": true, "x": )" + std::string(100, '[') +
                                     std::string(100, ']') + "}",
                                 {"healthy"})
                  .is_discarded())
      << "deeper than kMaxAnswerDepth, even in a member not kept";
}

// Something else on the port that answers /status with a "healthy" of its
// own is no healthy mesh-host: before, {"healthy": true} printed HEALTHY
// and exit 0, alone or as a fleet's row.
TEST(StatusCommandTest, AHealthyFlagAloneIsNotAMeshHost) {
  // Each says what it lacks.
  for (auto [body, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"healthy": true})", "no \"machine\" string"},
           {R"({"healthy": true, "machine": "m"})", "no \"generation\" that is a count"},
           {R"({"healthy": true, "machine": "m", "generation": -1,
                "last_reconcile": null, "resources": []})",
            "no \"generation\" that is a count"},
           {R"({"healthy": true, "machine": 7, "generation": 1})", "no \"machine\" string"},
           {R"({"healthy": "false", "machine": "m", "generation": 1})",
            "no \"healthy\" that is true or false"},
           {"[]", "not a JSON object"},
           {"<html>", "not JSON"}}) {
    FakeHost host(body, 200, "");
    std::ostringstream out, err;
    EXPECT_EQ(RunStatus("http://" + host.target(), out, err, ClientOptions{}), 2) << body;
    EXPECT_THAT(err.str(), HasSubstr("/status is not a mesh-host status document: " + why)) << body;
  }
  FakeHost whole(R"({"healthy": true, "machine": "m", "generation": 1, "last_reconcile": null,
                     "resources": []})",
                 200, "");
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://" + whole.target(), out, err, ClientOptions{}), 0) << err.str();
}

// A document nested a million deep (2 MB, well under the cap): printing a
// value of it recursed once a level, and the command died of its stack.
TEST(StatusCommandTest, ADeeplyNestedAnswerIsNotADocument) {
  std::string deep = R"({"healthy": true, "machine": )" + std::string(1000000, '[') +
                     std::string(1000000, ']') + "}";
  FakeHost host(std::move(deep), 200, "");
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://" + host.target(), out, err, ClientOptions{}), 2);
  EXPECT_THAT(err.str(), HasSubstr("/status is not a mesh-host status document"));
}

// An answer within the 16 MiB cap whose values are two bytes each
// ("[{},{},...]"): parsed whole it took some 30 bytes of memory for each
// byte read, some 500 MiB for one host, and 32 are asked at once.
TEST(StatusCommandTest, AnAnswerOfMillionsOfValuesIsNotADocument) {
  std::string many = R"({"healthy": false, "machine": "m", "resources": [)";
  for (size_t i = 0; i < kMaxAnswerValues; ++i) many += "{},";
  many += "{}]}";
  FakeHost host(std::move(many), 200, "");
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://" + host.target(), out, err, ClientOptions{}), 2);
  EXPECT_THAT(err.str(), HasSubstr("/status is not a mesh-host status document"));
}

// --targets and --password-file are read whole: /dev/zero (no newline,
// no end) grew the command until the kernel killed it.
TEST(StatusCommandTest, AnEndlessTargetsOrPasswordFileIsRefused) {
  auto targets = ReadTargets("/dev/zero", "http");
  ASSERT_FALSE(targets.has_value());
  EXPECT_THAT(targets.error().message, HasSubstr("--targets /dev/zero: larger than"));
  std::ostringstream out, err;
  EXPECT_EQ(RunStatusVerb({}, {}, "http://127.0.0.1:1", out, err, ClientOptions{}, "/dev/zero",
                          std::chrono::seconds(1)),
            2);
  EXPECT_THAT(err.str(), HasSubstr("--password-file /dev/zero: larger than 4096 bytes"));
}

// Two --targets files (two sites): the first was dropped, and a partial
// fleet said "all healthy". Every file is asked, and a target named twice
// is one machine, one row.
TEST(StatusCommandTest, EveryTargetsFileIsAskedAndATargetOnce) {
  FakeHost a(R"({"machine": "edge-1", "generation": 42, "healthy": true})", 200, "ok\n");
  FakeHost b(R"({"machine": "edge-2", "generation": 42, "healthy": false})", 503, "x\n");
  std::string one = ::testing::TempDir() + "/site-a.json";
  std::string two = ::testing::TempDir() + "/site-b.json";
  std::ofstream(one) << R"([{"targets": [")" << a.target() << R"(", ")" << a.target() << R"("]}])";
  std::ofstream(two) << R"([{"targets": [")" << b.target() << R"("]}])";
  std::ostringstream out, err;
  EXPECT_EQ(RunStatusVerb({"http://" + a.target()}, {one, two}, "", out, err), 1) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("2 machine(s): 1 healthy, 1 not healthy"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("edge-2 +42 +NOT HEALTHY"));
}

// A host whose first declaration was refused names no machine yet: its
// row had a blank MACHINE column, which reads as a column shifted.
TEST(StatusCommandTest, AHostThatNeverAppliedIsADashInTheMachineColumn) {
  FakeHost fresh(R"({"machine": "", "generation": 0, "healthy": false})", 503,
                 "declaration refused: x\n");
  std::ostringstream out, err;
  EXPECT_EQ(RunFleetStatus({"http://" + fresh.target()}, out, err, ClientOptions{}), 1);
  EXPECT_THAT(out.str(), ::testing::ContainsRegex(" +- +0 +NOT HEALTHY +declaration refused"));
}

// A FIFO nobody writes to as --targets or --password-file: the command
// hung past its --timeout until killed.
TEST(StatusCommandTest, APipeNoOneWritesToEndsAtTheDeadline) {
  std::string fifo = ::testing::TempDir() + "/targets.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (bool password : {false, true}) {
    std::ostringstream out, err;
    int rc = password
                 ? RunStatusVerb({"http://127.0.0.1:1"}, {}, "", out, err, {}, fifo,
                                 std::chrono::milliseconds(300))
                 : RunStatusVerb({}, {fifo}, "", out, err, {}, "", std::chrono::milliseconds(300));
    EXPECT_EQ(rc, 2);
    EXPECT_THAT(err.str(), HasSubstr("nothing more to read before the deadline (--timeout)"))
        << password;
  }
}

// A host whose /healthz could not be read (a proxy's 500, the deadline)
// was said to have "nothing more" to say: it was never heard.
TEST(StatusCommandTest, AHealthzNotReadIsNotNothingMore) {
  FakeHost broken(R"({"machine": "edge-3", "generation": 42, "healthy": false})", 500, "");
  std::ostringstream out, err;
  EXPECT_EQ(RunFleetStatus({"http://" + broken.target()}, out, err, ClientOptions{}), 1);
  EXPECT_THAT(out.str(), HasSubstr("(/healthz not read: "));
  EXPECT_THAT(out.str(), HasSubstr("answered 500"));
  EXPECT_THAT(out.str(), Not(HasSubstr("says nothing more")));
}

// Issue 21: "which of my machines are not healthy?" — one line each, from a
// file_sd file or several --url, exit 0 only when all are healthy.
TEST(StatusCommandTest, AFleetIsOneLinePerMachine) {
  FakeHost good(R"({"machine": "edge-1", "generation": 42, "healthy": true})", 200, "ok\n");
  FakeHost bad(R"({"machine": "edge-2", "generation": 42, "healthy": false})", 503,
               "unit fail2ban.service is failed (failed), declared running\n"
               "resource fail2ban.jail (file) failed: disk full\n");
  std::string targets = ::testing::TempDir() + "/targets.json";
  {
    std::ofstream f(targets);
    f << R"([{"targets": [")" << good.target() << R"(", ")" << bad.target()
      << R"("], "labels": {"site": "a"}}, {"targets": ["127.0.0.1:1"]}])";
  }
  std::ostringstream out, err;
  EXPECT_EQ(RunStatusVerb({}, {targets}, "http://127.0.0.1:9479", out, err), 1) << err.str();
  std::string text = out.str();
  EXPECT_THAT(text, HasSubstr(good.target()));
  EXPECT_THAT(text, ::testing::ContainsRegex("edge-1 +42 +healthy\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex(
                        "edge-2 +42 +NOT HEALTHY +unit fail2ban.service is failed \\(failed\\), "
                        "declared running \\(\\+1 more\\)\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("127.0.0.1:1 +- +- +UNREACHABLE +nothing answers"));
  EXPECT_THAT(text, HasSubstr("3 machine(s): 1 healthy, 1 not healthy, 1 unreachable\n"));

  std::ostringstream all_out, all_err;
  EXPECT_EQ(RunStatusVerb({"http://" + good.target(), "http://" + good.target() + "/status"}, {},
                          "", all_out, all_err),
            0)
      << all_err.str();
  EXPECT_THAT(all_out.str(), HasSubstr("2 machine(s): 2 healthy, 0 not healthy, 0 unreachable"));
}

TEST(StatusCommandTest, ABadTargetsFileSaysWhatIsWrong) {
  std::string path = ::testing::TempDir() + "/bad.json";
  for (const char* text :
       {"not json", "{}", R"([{"labels": {}}])", R"([{"targets": [1]}])", "[]"}) {
    std::ofstream(path) << text;
    std::ostringstream out, err;
    EXPECT_EQ(RunStatusVerb({}, {path}, "", out, err), 2) << text;
    EXPECT_THAT(err.str(), HasSubstr("--targets " + path + ": ")) << text;
    EXPECT_THAT(err.str(), HasSubstr("file_sd")) << text;
  }
  std::ostringstream out, err;
  EXPECT_EQ(RunStatusVerb({}, {"/nonexistent/targets.json"}, "", out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("No such file"));
  // A target or --url the client cannot take is the input's fault (exit 2,
  // which entry), not one more unreachable machine of a fleet (exit 1);
  // the others are asked and shown all the same.
  std::ofstream(path) << R"([{"targets": ["127.0.0.1:1", "10.0.0.1:99999"]}])";
  std::ostringstream out2, err2;
  EXPECT_EQ(RunStatusVerb({}, {path}, "", out2, err2), 2) << out2.str();
  EXPECT_THAT(err2.str(),
              HasSubstr("target 2 (10.0.0.1:99999): the port must be a number from 1 to 65535"));
  EXPECT_THAT(out2.str(), HasSubstr("nothing answers there")) << "the others are asked";
  EXPECT_THAT(out2.str(), HasSubstr("UNREACHABLE  not asked: the port must be"));
  std::ostringstream out3, err3;
  EXPECT_EQ(
      RunStatusVerb({"http://127.0.0.1:1", "http://me:hunter2@127.0.0.1:2"}, {}, "", out3, err3),
      2);
  EXPECT_THAT(err3.str(),
              HasSubstr("target 2 (a URL with credentials): credentials in the URL are not taken"));
  EXPECT_THAT(err3.str(), Not(HasSubstr("hunter2")));
}

// Review: a password never crosses plain http; a scheme httplib does not
// know is an error, not an exception that aborts a worker thread.
TEST(StatusCommandTest, CredentialsNeverGoOverPlainHttp) {
  ClientOptions with_user{"", "", "", "prometheus", "secret"};
  std::ostringstream out, err;
  EXPECT_EQ(RunStatus("http://127.0.0.1:1", out, err, with_user), 2);
  EXPECT_THAT(err.str(),
              HasSubstr("refusing to send a password or client certificate over plain http"));
  std::ostringstream out2, err2;
  EXPECT_EQ(
      RunStatusVerb({"http://127.0.0.1:1", "https://127.0.0.1:2"}, {}, "", out2, err2, with_user),
      2);
  EXPECT_THAT(err2.str(), HasSubstr("refusing to send"));
  for (std::string url : {"ftp://127.0.0.1:1", "htps://127.0.0.1:1"}) {
    std::ostringstream o, e;
    EXPECT_EQ(RunStatus(url, o, e), 2) << url;
    EXPECT_THAT(e.str(), HasSubstr("not an http:// or https:// URL")) << url;
    std::ostringstream o2, e2;
    EXPECT_EQ(RunStatusVerb({url, "http://127.0.0.1:1"}, {}, "", o2, e2), 2) << url;
  }
  std::string path = ::testing::TempDir() + "/schemes.json";
  std::ofstream(path) << R"([{"targets": ["10.0.0.1:9479"]}])";
  EXPECT_EQ(ReadTargets(path, "https")->at(0), "https://10.0.0.1:9479")
      << "with credentials, a targets file without __scheme__ means TLS";
  std::ofstream(path) << R"([{"targets": ["10.0.0.1:9479"], "labels": {"__scheme__": "ftp"}}])";
  EXPECT_FALSE(ReadTargets(path).has_value());
  // As Prometheus refuses them: a label that is not a string (a __scheme__
  // of 1 was passed over, and the target asked over the default scheme).
  for (const char* labels : {R"({"__scheme__": 1})", R"({"env": ["a"]})", R"([])"}) {
    std::ofstream(path) << R"([{"targets": ["10.0.0.1:9479"], "labels": )" << labels << "}]";
    auto read = ReadTargets(path, "https");
    ASSERT_FALSE(read.has_value()) << labels;
    EXPECT_THAT(read.error().message, HasSubstr("expected Prometheus file_sd JSON")) << labels;
  }
  std::ofstream(path) << R"([{"targets": ["10.0.0.1:9479"], "labels": {"env": "prod"}}])";
  EXPECT_EQ(ReadTargets(path, "https")->at(0), "https://10.0.0.1:9479");
  // A scheme in a target read as a port that is not a number; a path was
  // dropped without a word. Prometheus takes neither.
  const std::pair<const char*, const char*> wrong[] = {
      {"http://10.0.0.1:9479", "names a scheme: a target is HOST:PORT, its scheme the group's"},
      {"10.0.0.1:9479/metrics", "has a path: a target is HOST:PORT"}};
  for (const auto& [target, says] : wrong) {
    std::ofstream(path) << R"([{"targets": [")" << target << R"("]}])";
    auto read = ReadTargets(path, "http");
    ASSERT_FALSE(read.has_value()) << target;
    EXPECT_THAT(read.error().message, HasSubstr(says)) << target;
  }
}

// Issue 42 (1): one fleet, every kind of target at once. Credentials and
// the CA go only to https targets (a plain-http host is asked without
// them, not refused), and each unreachable target says why in words.
class TlsHost {
 public:
  TlsHost(const std::string& dir, const std::string& cert, bool auth, bool healthy) {
    third_party::RegisterTlsDigests();
    server_ = std::make_unique<httplib::SSLServer>((dir + "/" + cert + ".crt").c_str(),
                                                   (dir + "/" + cert + ".key").c_str());
    std::string status = std::string(R"({"machine": ")") + (auth ? "tls-auth" : "tls") +
                         R"(", "generation": 7, "healthy": )" + (healthy ? "true" : "false") + "}";
    auto allowed = [auth](const httplib::Request& req, httplib::Response& res) {
      if (!auth || req.get_header_value("Authorization") == "Basic cHJvbWV0aGV1czpzZWNyZXQ=") {
        return true;  // prometheus:secret
      }
      res.status = 401;
      return false;
    };
    server_->Get("/status", [status, allowed](const httplib::Request& req, httplib::Response& res) {
      if (allowed(req, res)) res.set_content(status, "application/json");
    });
    server_->Get("/healthz", [allowed](const httplib::Request& req, httplib::Response& res) {
      if (!allowed(req, res)) return;
      res.status = 503;
      res.set_content("unit jaild.service is failed (failed), declared running\n", "text/plain");
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
  }
  ~TlsHost() {
    server_->stop();
    thread_.join();
  }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::unique_ptr<httplib::SSLServer> server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(StatusCommandTest, AMixedFleetTellsTheTruthInOneCall) {
  std::string d = ::testing::TempDir() + "/mixed";
  std::string make =
      "set -e; rm -rf " + d + "; mkdir -p " + d + "; cd " + d +
      "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key"
      " -out ca.crt -subj /CN=ca -days 2 2>/dev/null"
      "; openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout host.key"
      " -out host.csr -subj /CN=127.0.0.1 2>/dev/null"
      "; printf 'subjectAltName=IP:127.0.0.1\\n' > ext"
      "; openssl x509 -req -in host.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out host.crt"
      " -days 2 -extfile ext 2>/dev/null"
      "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout foreign.key"
      " -out foreign.crt -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -days 2"
      " 2>/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << "openssl could not make the test's certificates";

  std::atomic<int> plain_with_password{0};
  httplib::Server plain;
  plain.Get("/status", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Authorization")) ++plain_with_password;
    res.set_content(R"({"machine": "plain", "generation": 7, "healthy": true})",
                    "application/json");
  });
  int plain_port = plain.bind_to_any_port("127.0.0.1");
  std::thread plain_thread([&] { plain.listen_after_bind(); });
  TlsHost tls(d, "host", /*auth=*/false, /*healthy=*/true);
  TlsHost tls_auth(d, "host", /*auth=*/true, /*healthy=*/false);
  TlsHost foreign(d, "foreign", /*auth=*/false, /*healthy=*/true);
  TricklingPeer frozen;
  std::string plain_target = "127.0.0.1:" + std::to_string(plain_port);
  std::string frozen_target = frozen.url().substr(7);

  std::string targets = d + "/targets.json";
  std::ofstream(targets) << R"([{"targets": [")" << plain_target
                         << R"("], "labels": {"__scheme__": "http"}},
      {"targets": [")" << tls.target()
                         << R"(", ")" << tls_auth.target() << R"("]},
      {"targets": [")" << plain_target
                         << R"("], "labels": {"site": "forgot-the-scheme"}},
      {"targets": ["127.0.0.1:1", ")"
                         << frozen_target << R"("], "labels": {"__scheme__": "http"}},
      {"targets": [")" << foreign.target()
                         << R"("], "labels": {"__scheme__": "https"}}])";
  ClientOptions opts;
  opts.ca = d + "/ca.crt";
  opts.user = "prometheus";
  std::string password = d + "/password";
  std::ofstream(password) << "secret\n";
  std::ostringstream out, err;
  int rc = RunStatusVerb({}, {targets}, {}, out, err, opts, password, std::chrono::seconds(3));
  std::string text = out.str();
  EXPECT_EQ(rc, 1) << err.str() << text;
  EXPECT_EQ(err.str(), "");
  auto row = [&](const std::string& target) {
    std::istringstream lines(text);
    std::vector<std::string> found;
    for (std::string l; std::getline(lines, l);) {
      if (l.starts_with(target + " ")) found.push_back(l);
    }
    return found;
  };
  ASSERT_EQ(row(plain_target).size(), 2u) << text;
  EXPECT_THAT(row(plain_target)[0], ::testing::ContainsRegex("plain +7 +healthy$"));
  EXPECT_THAT(row(plain_target)[1],
              HasSubstr("UNREACHABLE  the TLS handshake failed: it does not speak TLS (it "
                        "answers plain http: \"__scheme__\": \"http\" in the targets file)"));
  EXPECT_EQ(plain_with_password.load(), 0) << "no password over plain http";
  EXPECT_THAT(row(tls.target())[0], ::testing::ContainsRegex("tls +7 +healthy$"));
  EXPECT_THAT(row(tls_auth.target())[0],
              ::testing::ContainsRegex("tls-auth +7 +NOT HEALTHY +unit jaild.service is failed"));
  EXPECT_THAT(row("127.0.0.1:1")[0], HasSubstr("nothing answers there (connection refused"));
  EXPECT_THAT(row(frozen_target)[0], HasSubstr("no whole answer before the deadline (--timeout)"));
  EXPECT_THAT(row(foreign.target())[0],
              HasSubstr("its TLS certificate does not verify against --ca " + opts.ca + ": "));
  EXPECT_THAT(text, HasSubstr("7 machine(s): 2 healthy, 1 not healthy, 4 unreachable\n"));
  for (const char* enum_name : {"SSLConnection", "SSLServerVerification", "Connection"}) {
    EXPECT_THAT(text, ::testing::Not(::testing::ContainsRegex(std::string(" ") + enum_name + "$")));
  }
  plain.stop();
  plain_thread.join();
}

// A client certificate and key that cannot be used: httplib sent nothing
// and the table said "UNREACHABLE  Success" of every host. They are
// checked once, before any host is asked: exit 2, the flag and the file
// named, never the key's bytes.
TEST(StatusCommandTest, AClientCertificateThatCannotBeUsedIsExit2NamingIt) {
  std::string d = ::testing::TempDir() + "/client-pair";
  std::string make =
      "set -e; rm -rf " + d + "; mkdir -p " + d + "; cd " + d +
      "; for n in a b; do openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
      " -keyout $n.key -out $n.crt -subj /CN=$n -days 2 2>/dev/null; done"
      "; openssl pkey -in a.key -aes256 -passout pass:sesame -out locked.key 2>/dev/null"
      "; openssl pkey -in a.key -aes256 -passout pass: -out empty.key 2>/dev/null </dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << "openssl could not make the test's certificates";
  FakeHost host(R"({"machine": "edge-1", "generation": 42, "healthy": true})", 200, "ok\n");
  std::string targets = d + "/targets.json";
  std::ofstream(targets) << R"([{"targets": [")" << host.target() << R"("]}])";
  std::string key_text;
  {
    std::ifstream in(d + "/b.key");
    key_text.assign(std::istreambuf_iterator<char>(in), {});
  }
  struct Case {
    std::string cert, key, says;
  };
  const Case cases[] = {
      {d + "/a.crt", d + "/b.key",
       "--key " + d + "/b.key is not the key of the certificate in --cert " + d + "/a.crt"},
      {d + "/missing.crt", d + "/a.key", "--cert " + d + "/missing.crt: No such file"},
      {"/dev/zero", d + "/a.key", "--cert /dev/zero: not a regular file"},
      {d + "/a.key", d + "/a.key", "--cert " + d + "/a.key: no PEM certificate in it"},
      {d + "/a.crt", d + "/a.crt", "--key " + d + "/a.crt: no PEM private key in it"},
      {d + "/a.crt", d + "/locked.key", "an encrypted key is not read"},
      {d + "/a.crt", d + "/empty.key", "an encrypted key is not read"},
  };
  for (const Case& c : cases) {
    ClientOptions opts;
    opts.cert = c.cert;
    opts.key = c.key;
    std::ostringstream out, err;
    EXPECT_EQ(RunStatusVerb({}, {targets}, {}, out, err, opts, "", std::chrono::seconds(3)), 2)
        << c.says << "\n"
        << out.str() << err.str();
    EXPECT_THAT(err.str(), HasSubstr(c.says));
    EXPECT_EQ(out.str(), "") << "no host is asked";
    EXPECT_THAT(err.str(), Not(HasSubstr("Success")));
    EXPECT_THAT(err.str(), Not(HasSubstr(key_text.substr(30, 20))));
  }
  // A --ca that cannot be loaded made every host of a fleet read as
  // unreachable (exit 1, "cannot be loaded", no file named): an outage.
  const std::pair<std::string, std::string> cas[] = {
      {d + "/ca.crtX", "--ca " + d + "/ca.crtX: No such file"},
      {d, "--ca " + d + ": not a regular file"},
      {d + "/a.key", "--ca " + d + "/a.key: no PEM certificate in it"},
  };
  for (const auto& [ca, says] : cas) {
    ClientOptions opts;
    opts.ca = ca;
    std::ostringstream out, err;
    EXPECT_EQ(RunStatusVerb({}, {targets}, {}, out, err, opts, "", std::chrono::seconds(3)), 2)
        << says << "\n"
        << out.str() << err.str();
    EXPECT_THAT(err.str(), HasSubstr(says));
    EXPECT_EQ(out.str(), "") << "no host is asked";
  }
  // The pair that belongs together goes on to ask the host (over https,
  // which this plain host does not speak).
  ClientOptions good;
  good.cert = d + "/a.crt";
  good.key = d + "/a.key";
  std::ostringstream out, err;
  RunStatusVerb({}, {targets}, {}, out, err, good, "", std::chrono::seconds(3));
  EXPECT_THAT(out.str(), HasSubstr("UNREACHABLE"));
  EXPECT_THAT(out.str(), Not(HasSubstr("Success")));
}

// --prometheus at something that is not Prometheus's API, or at nothing:
// exit 2 and why, never a table of nothing called healthy.
TEST(StatusCommandTest, APrometheusThatIsNotOneIsExit2) {
  FakeHost host(R"({"machine": "edge-1", "generation": 42, "healthy": true})", 200, "ok\n");
  std::ostringstream out, err;
  EXPECT_EQ(RunStatusVerb({}, {}, "", out, err, {}, "", std::chrono::seconds(3),
                          "http://" + host.target()),
            2);
  EXPECT_THAT(err.str(), HasSubstr("/api/v1/query did not answer as Prometheus's HTTP API does (is "
                                   "it a Prometheus URL?): it answered 404"));
  std::ostringstream out2, err2;
  EXPECT_EQ(
      RunStatusVerb({}, {}, "", out2, err2, {}, "", std::chrono::seconds(3), "http://127.0.0.1:1"),
      2);
  EXPECT_THAT(err2.str(),
              HasSubstr("--prometheus: http://127.0.0.1:1 unreachable: nothing answers"));
  // A Prometheus that scrapes no mesh-host (a job named otherwise): not a
  // table of nothing that exits 0.
  httplib::Server empty;
  empty.Get("/api/v1/query", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status": "success", "data": {"resultType": "vector", "result": []}})",
                    "application/json");
  });
  int port = empty.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { empty.listen_after_bind(); });
  std::ostringstream out4, err4;
  EXPECT_EQ(RunPrometheusStatus("http://127.0.0.1:" + std::to_string(port), out4, err4), 2);
  EXPECT_THAT(err4.str(),
              HasSubstr("scrapes no mesh-host (no target of a job matching mesh-host.*)"));
  EXPECT_EQ(out4.str(), "");
  empty.stop();
  serving.join();
  ClientOptions with_user;
  with_user.user = "u";
  std::ostringstream out3, err3;
  EXPECT_EQ(RunPrometheusStatus("http://127.0.0.1:1", out3, err3, with_user), 2);
  EXPECT_THAT(err3.str(), HasSubstr("refusing to send a password"));
}

// A host whose last apply failed outside any one resource (its record not
// saved), or that has not succeeded for three intervals (an apply stalled):
// its /healthz says 503, and --prometheus said "healthy".
TEST(StatusCommandTest, PrometheusSeesAnApplyThatFailedOrStalled) {
  httplib::Server api;
  api.Get("/api/v1/query", [](const httplib::Request& req, httplib::Response& res) {
    std::string q = req.get_param_value("query");
    auto sample = [](const char* instance, const char* value) {
      return std::string(R"({"metric": {"instance": ")") + instance + R"("}, "value": [1, ")" +
             value + R"("]})";
    };
    for (std::string wrapper : {"topk by (instance) (1, ", "count by (instance) ("}) {
      if (q.starts_with(wrapper)) q = q.substr(wrapper.size());
    }
    std::string result;
    if (q.starts_with("up{")) {
      result = sample("failed:1", "1") + "," + sample("stalled:1", "1") + "," +
               sample("looping:1", "1") + "," + sample("fine:1", "1") + "," +
               sample("node:9100", "1");
    } else if (q.starts_with("group by (instance) (mesh_host_build_info{")) {
      // node:9100 answers Prometheus and is no mesh-host (a wrong port).
      result = sample("failed:1", "1") + "," + sample("stalled:1", "1") + "," +
               sample("looping:1", "1") + "," + sample("fine:1", "1");
    } else if (q.starts_with("group by (instance) (last_over_time(up{")) {
      result = sample("gone:1", "1");
    } else if (q.starts_with("mesh_host_last_reconcile_timestamp_seconds")) {
      result = sample("failed:1", "1");
    } else if (q.starts_with("time() - (mesh_host_last_success_timestamp_seconds")) {
      result = sample("stalled:1", "1");
    } else if (q.starts_with("changes(mesh_host_start_time_seconds")) {
      result = sample("looping:1", "4");
    }
    res.set_content(
        R"({"status": "success", "data": {"resultType": "vector", "result": [)" + result + "]}}",
        "application/json");
  });
  int port = api.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { api.listen_after_bind(); });
  std::ostringstream out, err;
  EXPECT_EQ(RunPrometheusStatus("http://127.0.0.1:" + std::to_string(port), out, err), 1)
      << err.str();
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("failed:1 .*NOT HEALTHY +the last apply failed"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex(
                             "stalled:1 .*NOT HEALTHY +no successful apply for three --interval"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("fine:1 .*healthy"));
  // A mesh-host in a loop (killed by the watchdog at each stalled apply)
  // starts its stale count anew each time; a host with no sample now (its
  // shard down) was left out of the table, and the fleet read healthy.
  EXPECT_THAT(out.str(),
              ::testing::ContainsRegex(
                  "looping:1 .*NOT HEALTHY +mesh-host itself started 4 time\\(s\\) again"));
  EXPECT_THAT(out.str(), ::testing::ContainsRegex("gone:1 .*UNREACHABLE +no sample of it now"));
  // A target with no mesh-host series read healthy: no alert fires for it.
  EXPECT_THAT(out.str(), ::testing::ContainsRegex(
                             "node:9100 .*UNREACHABLE +Prometheus scrapes it, and it exports no "
                             "mesh_host_build_info: not a mesh-host"));
  EXPECT_THAT(out.str(), HasSubstr("6 machine(s): 1 healthy, 3 not healthy, 2 unreachable"));
  api.stop();
  serving.join();
}

// A partial answer (a Thanos store or a Mimir shard not answering, said
// in the API's "warnings") may lack exactly the hosts that are wrong: not
// a table called whole.
TEST(StatusCommandTest, APartialPrometheusAnswerIsExit2) {
  httplib::Server api;
  api.Get("/api/v1/query", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status": "success", "warnings": ["store eu-1 unavailable"],
        "data": {"resultType": "vector",
                 "result": [{"metric": {"instance": "h:1"}, "value": [1, "1"]}]}})",
                    "application/json");
  });
  int port = api.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { api.listen_after_bind(); });
  std::ostringstream out, err;
  EXPECT_EQ(RunPrometheusStatus("http://127.0.0.1:" + std::to_string(port), out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("says its answer may be partial: store eu-1 unavailable"));
  EXPECT_EQ(out.str(), "");
  api.stop();
  serving.join();
}

// An answer whose samples are not samples (a label that is no string, a
// value that is no [time, "value"]) was shown as rows of empty targets,
// exit 1; a Prometheus that refused the query was "not Prometheus's API".
TEST(StatusCommandTest, APrometheusAnswerOfNoSamplesOrARefusalIsSaidAsSuch) {
  std::string answer = R"({"status": "success", "data": {"resultType": "vector",
      "result": [{"metric": "x", "value": "x"}]}})";
  int code = 200;
  httplib::Server api;
  api.Get("/api/v1/query", [&](const httplib::Request&, httplib::Response& res) {
    res.status = code;
    res.set_content(answer, "application/json");
  });
  int port = api.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { api.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  for (std::string sample : {R"({"metric": "x", "value": "x"})", R"({"value": [1, "1"]})",
                             R"({"metric": {"instance": 7}, "value": [1, "1"]})",
                             R"({"metric": {"instance": "h:1"}, "value": [1, 1]})"}) {
    answer =
        R"({"status": "success", "data": {"resultType": "vector", "result": [)" + sample + "]}}";
    std::ostringstream out, err;
    EXPECT_EQ(RunPrometheusStatus(url, out, err), 2) << sample;
    EXPECT_THAT(err.str(), HasSubstr("a sample of its answer is not {\"metric\": {labels}"))
        << sample;
    EXPECT_EQ(out.str(), "") << sample;
  }
  code = 422;
  answer = R"({"status": "error", "errorType": "execution", "error": "query timed out"})";
  std::ostringstream out, err;
  EXPECT_EQ(RunPrometheusStatus(url, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("/api/v1/query refused the query (execution): query timed out"));
  // Behind basic auth: how to give a user, not "is it a Prometheus URL?".
  code = 401;
  answer = "unauthorized";
  std::ostringstream out401, err401;
  EXPECT_EQ(RunPrometheusStatus(url, out401, err401), 2);
  EXPECT_THAT(err401.str(), HasSubstr("answered 401: it asks for a user (--user"));
  api.stop();
  serving.join();
}

// A mass failure: 200,000 resources failed across the fleet. Every sample
// at once is 24 MiB, past the cap, and the command exited 2 saying only
// that: the one moment its answer was wanted most.
TEST(StatusCommandTest, PrometheusNamesAMassFailureWithinTheCap) {
  constexpr int kFailed = 200000;
  httplib::Server api;
  api.Get("/api/v1/query", [](const httplib::Request& req, httplib::Response& res) {
    std::string q = req.get_param_value("query");
    auto sample = [](const std::string& labels, const std::string& value) {
      return R"({"metric": {"instance": "h:1")" + labels + R"(}, "value": [1, ")" + value +
             R"("]})";
    };
    std::string result;
    if (q.starts_with("up{") || q.starts_with("group by (instance) (mesh_host_build_info{")) {
      result = sample("", "1");
    } else if (q.find("mesh_host_resource_failed") != std::string::npos) {
      auto failed = [&](int i) {
        return sample(R"(, "resource": "r)" + std::to_string(i) +
                          R"(", "kind": "file", "job": "mesh-host-with-a-long-job-name")",
                      "1");
      };
      if (q.starts_with("count by (instance)")) {
        result = sample("", std::to_string(kFailed));
      } else if (q.starts_with("topk by (instance) (1, ")) {
        result = failed(0);
      } else {  // every sample: about 120 bytes each
        for (int i = 0; i < kFailed; ++i) result += (i > 0 ? "," : "") + failed(i);
      }
    }
    res.set_content(
        R"({"status": "success", "data": {"resultType": "vector", "result": [)" + result + "]}}",
        "application/json");
  });
  int port = api.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { api.listen_after_bind(); });
  std::ostringstream out, err;
  EXPECT_EQ(RunPrometheusStatus("http://127.0.0.1:" + std::to_string(port), out, err), 1)
      << err.str();
  EXPECT_THAT(out.str(), HasSubstr("NOT HEALTHY  resource r0 (file) failed (+199999 more)"));
  api.stop();
  serving.join();
}

// An API served under a path (Mimir's /prometheus, a proxy's prefix): the
// path was taken as part of the host name, and the command said
// "unreachable: nothing answers".
TEST(StatusCommandTest, APrometheusUnderAPathIsAsked) {
  httplib::Server api;
  api.Get("/prometheus/api/v1/query", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status": "success", "data": {"resultType": "vector", "result": []}})",
                    "application/json");
  });
  int port = api.bind_to_any_port("127.0.0.1");
  std::thread serving([&] { api.listen_after_bind(); });
  std::ostringstream out, err;
  EXPECT_EQ(
      RunPrometheusStatus("http://127.0.0.1:" + std::to_string(port) + "/prometheus/", out, err),
      2);
  EXPECT_THAT(err.str(), HasSubstr("scrapes no mesh-host")) << "asked, and answered";
  api.stop();
  serving.join();
}

}  // namespace
}  // namespace mesh::cli
