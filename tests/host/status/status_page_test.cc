#include "host/status/status_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "host/core/printable.h"
#include "host/core/sha256.h"

namespace mesh::status {
namespace {

// A page is long: a failure quotes where the text was looked for, not it all.
::testing::AssertionResult Has(const std::string& page, const std::string& text) {
  if (page.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no \"" << text << "\" in a page of " << page.size()
                                       << " bytes starting " << page.substr(0, 300);
}

::testing::AssertionResult Lacks(const std::string& page, const std::string& text) {
  size_t at = page.find(text);
  if (at == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\"" << text << "\" at " << at << ": " << page.substr(at > 100 ? at - 100 : 0, 300);
}

core::ResourceOutcome File(const std::string& id, core::Outcome outcome = core::Outcome::kUnchanged,
                           const std::string& detail = "as declared") {
  core::ResourceOutcome r;
  r.id = id;
  r.kind = "file";
  r.outcome = outcome;
  r.detail = detail;
  r.digest = "sha256:" + id;
  return r;
}

core::ResourceOutcome Service(const std::string& id, const std::string& unit, bool up,
                              const std::string& detail) {
  core::ResourceOutcome r;
  r.id = id;
  r.kind = "service";
  r.outcome = up ? core::Outcome::kRestarted : core::Outcome::kFailed;
  r.detail = detail;
  r.mutable_declared().unit = unit;
  r.mutable_declared().state = "running";
  r.unit = core::UnitSnapshot{
      unit, up ? "active" : "failed", up ? "running" : "failed", up ? "success" : "exit-code", 0, 1,
      up};
  return r;
}

Snapshot Picture(std::vector<core::ResourceOutcome> resources) {
  Snapshot s;
  s.machine = "edge-1";
  s.generation = 15;
  s.declaration_digest = "sha256:abc";
  s.reconciled = true;
  s.result = "ok";
  s.finished_at = "2026-12-03T14:00:00Z";
  s.resources = std::move(resources);
  for (const auto& r : s.resources) {
    if (r.outcome == core::Outcome::kFailed) s.result = "failed";
  }
  return s;
}

std::string Render(const Snapshot& s, size_t page = 1) {
  auto html = RenderStatusPage(s, {.version = "0.1.0 (test)", .page = page});
  EXPECT_TRUE(html.has_value()) << html.error().message;
  return html.value_or("");
}

// Where the first table row naming `text` sits: the failing ones must come first.
size_t FirstRowWith(const std::string& html, const std::string& text) {
  size_t table = html.find("<section id=\"resources\">");
  return html.find(text, table);
}

TEST(StatusPageTest, AHealthyHostSaysSoAndLinksTheOtherPages) {
  std::string html = Render(Picture({File("motd"), Service("jail", "jaild.service", true, "ok")}));
  EXPECT_TRUE(Has(html, "<header class=\"good\"><h1><span id=\"verdict\">HEALTHY</span>"));
  EXPECT_TRUE(Has(html, "machine edge-1, generation 15"));
  for (const char* link : {"href=\"/status\"", "href=\"/healthz\"", "href=\"/metrics\""}) {
    EXPECT_TRUE(Has(html, link));
  }
  EXPECT_TRUE(Lacks(html, "id=\"wrong\""));
  EXPECT_TRUE(Has(html, "jaild.service: active (running)"));
  EXPECT_TRUE(Has(html, "0 by systemd, 1 by the host"));
  EXPECT_TRUE(Has(html, "not checked (no --verify-key)"));
  EXPECT_TRUE(Has(html, "mesh-host 0.1.0 (test)"));
}

// ADR 184's case: the unit that died after its restart is named at the top
// and is the table's first row, before the resources that are fine.
TEST(StatusPageTest, TheFailingUnitIsNamedAtTheTopAndListedFirst) {
  std::vector<core::ResourceOutcome> rs;
  for (int i = 0; i < 5; ++i) rs.push_back(File("file-" + std::to_string(i)));
  rs.push_back(Service("jail", "jaild.service", false,
                       "failed jaild.service (Result=exit-code) 0.2 s after restart"));
  Snapshot s = Picture(std::move(rs));
  std::string html = Render(s);
  EXPECT_TRUE(Has(html, "<header class=\"bad\"><h1><span id=\"verdict\">NOT HEALTHY"));
  size_t wrong = html.find("<section id=\"wrong\">");
  ASSERT_NE(wrong, std::string::npos);
  EXPECT_LT(wrong, html.find("<section id=\"apply\">"));
  EXPECT_LT(html.find("jaild.service", wrong), html.find("<section id=\"apply\">"));
  EXPECT_LT(FirstRowWith(html, "<tr class=\"failing\">"), FirstRowWith(html, "file-0"));
  EXPECT_TRUE(Has(html, "Resources: 6, 1 failing"));
}

// Beside a failed unit, what its run logged, as /status and `mesh-host
// status` show it: the page left the daemon's own reason out.
TEST(StatusPageTest, AFailedUnitsJournalLinesAreShown) {
  core::ResourceOutcome jail =
      Service("jail", "jaild.service", false, "jaild.service failed (Result=exit-code)");
  jail.unit->journal = {"jaild: starting",
                        "jaild: /etc/jail.conf line 3: unknown option <bantime2>"};
  core::ResourceOutcome mute = Service("mute", "mute.service", false, "mute.service failed");
  mute.unit->journal_note = "(the journal holds no line of this run)";
  std::string html = Render(Picture({jail, mute}));
  EXPECT_TRUE(
      Has(html, "<code>journal: jaild: /etc/jail.conf line 3: unknown option &lt;bantime2&gt;"))
      << "escaped, as every outside text";
  EXPECT_TRUE(Has(html, "(1 earlier line(s): <a href=\"/status\">/status</a>)"));
  EXPECT_FALSE(Has(html, "jaild: starting")) << "the last line only: the page stays bounded";
  EXPECT_TRUE(Has(html, "<code>journal: (the journal holds no line of this run)</code>"));
}

// A unit declared running and found down by the watch fails /healthz
// whatever its apply said: the page holds it to the same rule.
TEST(StatusPageTest, AUnitDownSinceItsApplyIsFailingToo) {
  core::ResourceOutcome jail = Service("jail", "jaild.service", true, "restarted");
  jail.unit->active_state = "activating";
  jail.unit->sub_state = "auto-restart";
  jail.unit->up = false;
  std::string html = Render(Picture({File("a"), jail}));
  EXPECT_TRUE(Has(html, "NOT HEALTHY"));
  EXPECT_LT(FirstRowWith(html, "<tr class=\"failing\">"), FirstRowWith(html, "<code>a</code>"));
}

// Member names and systemd's words are any bytes: none of them can open or
// close a tag, and the page stays valid UTF-8 of printable text.
TEST(StatusPageTest, OutsideTextIsEscapedEverywhere) {
  const std::vector<std::string> corpus = {"<script>alert(1)</script>",
                                           "\"><img src=x onerror=alert(1)>",
                                           "' onmouseover='x",
                                           "a&amp;b",
                                           "x\xff\xfe",
                                           "bell\x07 esc\x1b[31m",
                                           "line\nfailed fake.service (service): forged",
                                           "</td></tr></table><h1>forged</h1>",
                                           "\xc3\x28",
                                           "\xe2\x80\xae"
                                           "evil"};
  std::vector<core::ResourceOutcome> rs;
  for (size_t i = 0; i < corpus.size(); ++i) {
    core::ResourceOutcome r =
        File(corpus[i] + std::to_string(i), core::Outcome::kFailed, corpus[i]);
    r.kind = corpus[i];
    r.applied_at = corpus[i];
    rs.push_back(r);
  }
  rs.push_back(Service(corpus[0], corpus[1], false, corpus[2]));
  Snapshot s = Picture(std::move(rs));
  s.machine = corpus[7];
  s.error = corpus[0];
  s.apply_error = corpus[1];
  s.stalled = corpus[6];
  s.signer = core::Signer{corpus[3], corpus[7]};
  std::string html = Render(s);
  EXPECT_TRUE(Lacks(html, "<script"));
  EXPECT_TRUE(Lacks(html, "<img"));
  EXPECT_TRUE(Lacks(html, "<h1>forged"));
  EXPECT_TRUE(Lacks(html, "onmouseover='"));
  EXPECT_TRUE(Has(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_TRUE(Has(html, "a&amp;amp;b"));
  EXPECT_TRUE(Has(html, "x\\xff\\xfe"));
  EXPECT_TRUE(Lacks(html, "\nfailed fake.service"));
  for (unsigned char c : html) {
    EXPECT_TRUE(c >= 0x20 || c == '\n') << "control byte " << int(c);
  }
  EXPECT_TRUE(core::IsPrintable(std::regex_replace(html, std::regex("\n"), "")));
  // Each tag is one of the page's own.
  std::regex tag("<(/?)([a-zA-Z0-9!]+)");
  std::set<std::string> own = {"!DOCTYPE", "html", "head", "meta", "title", "style", "body",
                               "header",   "h1",   "span", "p",    "a",     "main",  "section",
                               "h2",       "ul",   "li",   "dl",   "dt",    "dd",    "code",
                               "table",    "tr",   "th",   "td",   "nav",   "footer"};
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator();
       ++it) {
    EXPECT_TRUE(own.count((*it)[2].str())) << (*it)[0].str();
  }
}

// Nothing is fetched from anywhere: no script, no image, no link but the
// host's own pages, and the only style is the inline one the policy names.
TEST(StatusPageTest, SelfContainedUnderItsOwnPolicy) {
  Snapshot s = Picture({File("a"), Service("jail", "jaild.service", false, "died")});
  std::string html = Render(s);
  for (const char* external :
       {"http:", "https:", "src=", "<link", "<script", "url(", "@import", " style=", "//"}) {
    // "//" may appear only inside the DOCTYPE-free text: there is none.
    EXPECT_TRUE(Lacks(html, external)) << external;
  }
  std::regex href("href=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), href); it != std::sregex_iterator();
       ++it) {
    EXPECT_EQ((*it)[1].str().substr(0, 1), "/") << (*it)[0].str();
  }
  size_t open = html.find("<style>") + 7;
  size_t close = html.find("</style>");
  ASSERT_EQ(html.find("<style>", open), std::string::npos) << "one style block";
  std::string style = html.substr(open, close - open);
  EXPECT_TRUE(Has(StatusPagePolicy(), "style-src 'sha256-" + core::Sha256Base64(style) + "'"));
  EXPECT_TRUE(Has(StatusPagePolicy(), "default-src 'none'"));
  // The hash is base64 of the raw digest, as CSP reads it.
  EXPECT_EQ(core::Sha256Base64(""), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

// 10,000 resources, half of them failing: the page stays small, the failing
// come first, and the rest are one page away.
TEST(StatusPageTest, TenThousandResourcesArePagedAndBounded) {
  std::vector<core::ResourceOutcome> rs;
  for (int i = 0; i < 10000; ++i) {
    rs.push_back(File("f" + std::to_string(i),
                      i % 2 ? core::Outcome::kFailed : core::Outcome::kUnchanged,
                      std::string(5000, 'x')));
  }
  Snapshot s = Picture(std::move(rs));
  EXPECT_EQ(PageCount(s), 50u);
  std::string first = Render(s);
  EXPECT_LT(first.size(), 512u * 1024) << "the first page";
  EXPECT_TRUE(Has(first, "Resources: 10000, 5000 failing"));
  EXPECT_TRUE(Has(first, "and 4980 more"));
  EXPECT_TRUE(Has(first, "href=\"/?page=2\">next</a>"));
  // Failing first: page 25 holds the last failing (f9999), page 26 the first fine one (f0).
  EXPECT_TRUE(Has(Render(s, 25), "<code>f9999</code>"));
  EXPECT_TRUE(Has(Render(s, 26), "<code>f0</code>"));
  EXPECT_TRUE(Has(Render(s, 50), "<code>f9998</code>"));
  EXPECT_TRUE(Lacks(Render(s, 50), ">next</a>"));
  auto past = RenderStatusPage(s, {.version = "", .page = 51});
  ASSERT_FALSE(past.has_value());
  EXPECT_EQ(past.error().message, "no page 51: the pages are 1 to 50");
  EXPECT_FALSE(RenderStatusPage(s, {.version = "", .page = 0}).has_value());
}

TEST(StatusPageTest, BeforeAnyApplyAndOnARefusal) {
  Snapshot none;
  std::string html = Render(none);
  EXPECT_TRUE(Has(html, "NOT HEALTHY"));
  EXPECT_TRUE(Has(html, "none has finished yet"));
  EXPECT_TRUE(Has(html, "Resources: 0, 0 failing"));
  Snapshot refused = Picture({File("a")});
  refused.error = "declaration, field generation: 3 is older than the applied 15";
  html = Render(refused);
  EXPECT_TRUE(Has(html, "declaration refused: declaration, field generation: 3"));
  EXPECT_TRUE(Has(html, "(the generation below stays in force)"));
}

TEST(StatusPageTest, TheSignerIsShown) {
  Snapshot s = Picture({File("a")});
  s.signer = core::Signer{"62DA9E45B3F8B0AF", "generation 15 by ops"};
  EXPECT_TRUE(Has(Render(s),
                  "key <code>62DA9E45B3F8B0AF</code>, trusted comment "
                  "\u201cgeneration 15 by ops\u201d"));
}

}  // namespace
}  // namespace mesh::status
