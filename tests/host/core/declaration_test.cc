#include "host/core/declaration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace mesh::core {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json Base() {
  return json::parse(R"({
    "machine": "edge-1", "generation": 42,
    "resources": [
      {"id": "fail2ban.jail", "kind": "file", "path": "/etc/fail2ban/jail.d/mesh.conf",
       "content": "[sshd]\nenabled = true\n", "mode": "0644"},
      {"id": "node-tools.token", "kind": "credential", "path": "/etc/mesh/node-tools.token",
       "content_base64": "c2VjcmV0", "mode": "0400"},
      {"id": "fail2ban.service", "kind": "service", "unit": "fail2ban.service",
       "state": "running", "restart_on": ["fail2ban.jail"]},
      {"id": "node-tools.runtime", "kind": "process", "path": "/opt/node-tools",
       "source": "node-tools-1.4.2.tar.gz",
       "sha256": "0000000000000000000000000000000000000000000000000000000000000000",
       "unit": "node-tools.service", "unit_text": "[Service]\nExecStart=/opt/node-tools/bin/serve\n",
       "restart_on": ["node-tools.token"]}
    ]})");
}

std::string Refusal(const json& doc) {
  auto d = ParseDeclaration(doc.dump());
  EXPECT_FALSE(d.has_value()) << "accepted: " << doc.dump();
  return d ? "" : d.error().message;
}

TEST(DeclarationTest, ParsesTheSpecExample) {
  auto d = ParseDeclaration(Base().dump());
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_EQ(d->machine, "edge-1");
  EXPECT_EQ(d->generation, 42u);
  ASSERT_EQ(d->resources.size(), 4u);
  EXPECT_EQ(d->resources[1].content, "secret");
  EXPECT_EQ(d->resources[1].mode, 0400u);
  EXPECT_EQ(d->resources[2].unit().restart_on, std::vector<std::string>{"fail2ban.jail"});
  EXPECT_EQ(d->resources[3].kind, Kind::kProcess);
  EXPECT_EQ(d->digest.size(), 64u);
}

// A resource boxes its unit's part (declaration.h): a file's and a
// credential's carry none, or every file pays the 176 bytes the box saves.
TEST(DeclarationTest, OnlyUnitsHoldAUnitPart) {
  auto d = ParseDeclaration(Base().dump());
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_FALSE(d->resources[0].unit_spec.has_value());
  EXPECT_FALSE(d->resources[1].unit_spec.has_value());
  EXPECT_TRUE(d->resources[2].unit_spec.has_value());
  EXPECT_TRUE(d->resources[3].unit_spec.has_value());
  EXPECT_EQ(d->resources[0].unit().name, "");
}

TEST(DeclarationTest, DefaultModes) {
  json doc = Base();
  doc["resources"][0].erase("mode");
  doc["resources"][1].erase("mode");
  auto d = ParseDeclaration(doc.dump());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->resources[0].mode, 0644u);
  EXPECT_EQ(d->resources[1].mode, 0400u);
  EXPECT_EQ(d->resources[0].owner, "root");
}

// A refusal names what it refuses in a bounded line: an id of a megabyte
// was quoted whole, in the log, /status and /healthz, and journald cut the
// line before the reason at its end.
TEST(DeclarationTest, AnOverlongIdIsNamedCutShort) {
  const std::string huge(1 << 20, 'a');
  json doc = Base();
  doc["resources"][0]["id"] = huge;
  std::string id_words = Refusal(doc);
  EXPECT_THAT(id_words, HasSubstr("field id: id longer than 128 characters"));
  EXPECT_LT(id_words.size(), 1000u) << id_words.substr(0, 300);
  doc = Base();
  doc["resources"][2]["restart_on"] = {huge};
  std::string ref_words = Refusal(doc);
  EXPECT_THAT(ref_words, HasSubstr("resource fail2ban.service, field restart_on: "));
  EXPECT_LT(ref_words.size(), 1000u) << ref_words.substr(0, 300);
  // So is every other value a refusal quotes.
  for (auto [at, field] : std::vector<std::pair<int, std::string>>{{0, "path"},
                                                                   {0, "mode"},
                                                                   {0, "owner"},
                                                                   {0, "kind"},
                                                                   {2, "unit"},
                                                                   {2, "state"},
                                                                   {2, "on_failure"},
                                                                   {3, "source"}}) {
    doc = Base();
    doc["resources"][at][field] = huge;
    std::string words = Refusal(doc);
    EXPECT_THAT(words, HasSubstr("field " + field + ": ")) << field;
    EXPECT_LT(words.size(), 1000u) << field << ": " << words.substr(0, 300);
  }
}

// A refused id hid every other refusal of its resource: fixing the id
// showed the next round.
TEST(DeclarationTest, ARefusedIdDoesNotHideItsResourcesOtherRefusals) {
  json doc = Base();
  doc["resources"].push_back(
      {{"id", "A"}, {"kind", "file"}, {"path", "rel"}, {"content", "x"}, {"mode", "9"}});
  auto d = ParseDeclaration(doc.dump());
  ASSERT_FALSE(d.has_value());
  EXPECT_THAT(d.error().details,
              ::testing::ElementsAre(HasSubstr("resource A, field id: \"A\" does not match"),
                                     HasSubstr("resource #4, field path: \"rel\" is not absolute"),
                                     HasSubstr("resource #4, field mode: ")));
}

TEST(DeclarationTest, InvalidJson) {
  auto d = ParseDeclaration("{\"machine\": ");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("invalid JSON"));
}

// A syntax error says how to mend it, not only what the parser expected.
TEST(DeclarationTest, InvalidJsonSaysHowToMendIt) {
  std::string good = Base().dump();
  auto said = [](const std::string& text) {
    auto d = ParseDeclaration(text);
    return d ? std::string("accepted") : d.error().message;
  };
  std::string trailing = good;
  trailing.insert(trailing.rfind(']'), ",");
  EXPECT_THAT(said(trailing), HasSubstr("a comma before a closing ] or }"));
  EXPECT_THAT(said(good.substr(0, good.size() - 1)), HasSubstr("the text ends too soon"));
  EXPECT_THAT(said(R"({"machine": "m" "generation": 1, "resources": []})"),
              HasSubstr("a comma is missing before it"));
  EXPECT_THAT(said("{\"machine\": \"a\nb\", \"generation\": 1, \"resources\": []}"),
              HasSubstr("write it as \\n"));
  // Another control character is no line break.
  std::string soh = said("{\"machine\": \"a\x01b\", \"generation\": 1, \"resources\": []}");
  EXPECT_THAT(soh, HasSubstr("a string holds a control character as it is: write it escaped"));
  EXPECT_THAT(soh, ::testing::Not(HasSubstr("line break")));
  EXPECT_THAT(said(R"({"machine": "m", "generation": 1, "resources": [], "x": tru})"),
              HasSubstr("python3 -m json.tool FILE"));
  // What the parser expected decides before what it found: a ']' where a
  // '}' belongs is an object left open, not a value missing.
  EXPECT_THAT(said(R"({"machine": "m", "generation": 1, "resources": [{"id": "x"]})"),
              HasSubstr("the brackets do not pair"));
  EXPECT_THAT(said(good + "}"), HasSubstr("a } or ] too many"));
  EXPECT_THAT(said(R"({"machine" "m", "generation": 1, "resources": []})"),
              HasSubstr("a colon is missing"));
  EXPECT_THAT(said(R"({"machine": "m", "generation": 1, "resources": [{"id": "a",}]})"),
              HasSubstr("a comma before a closing }: remove it"));
  EXPECT_THAT(said(R"({"machine": "m", "generation": 1, "resources": [{"id": "a"} {"id": "b"}]})"),
              HasSubstr("a comma is missing before it"));
  EXPECT_THAT(said(R"({"machine": })"), HasSubstr("nothing after a \":\""));
  EXPECT_THAT(said(R"({"machine": "m", "resources": [{"id": "a",]})"),
              HasSubstr("the brackets do not pair"));
}

TEST(DeclarationTest, InvalidUtf8) {
  auto d = ParseDeclaration("{\"machine\": \"\xff\xfe\", \"generation\": 1, \"resources\": []}");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("invalid JSON"));
}

// Resources are checked while the text streams by; the messages still come
// in the order of a whole parse: syntax first, then the top level, then the
// resources.
TEST(DeclarationTest, SyntaxErrorAfterABadResourceIsReportedAsSyntax) {
  json doc = Base();
  doc["resources"][0]["kind"] = "command";
  std::string text = doc.dump();
  text.pop_back();  // the closing brace
  auto d = ParseDeclaration(text);
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("invalid JSON"));
}

TEST(DeclarationTest, TopLevelRefusalComesBeforeAResourceRefusal) {
  json doc = Base();
  doc["resources"][0]["kind"] = "command";
  doc["machine"] = "";
  EXPECT_THAT(Refusal(doc), HasSubstr("field machine: must be a non-empty string"));
}

// The machine heads the record's first line, which its reader holds whole
// (up to 1 MiB): a name of a host name's length at most, not a megabyte.
TEST(DeclarationTest, AMachineNameIsBoundedAsAHostName) {
  json doc = Base();
  doc["machine"] = std::string(255, 'm');
  EXPECT_TRUE(ParseDeclaration(doc.dump()).has_value());
  doc["machine"] = std::string(256, 'm');
  EXPECT_THAT(Refusal(doc), HasSubstr("field machine: longer than 255 bytes"));
}

// Issue 39 (7): a repeated "resources" was read as the last one: refused.
TEST(DeclarationTest, RepeatedResourcesKeyIsRefused) {
  std::string text = R"({"machine": "m", "generation": 1,
    "resources": [{"id": "bad", "kind": "command"}],
    "resources": [{"id": "a", "kind": "file", "path": "/a", "content": ""}]})";
  auto d = ParseDeclaration(text);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message, "declaration: key \"resources\" appears twice at the top level");
}

// A last "resources" that is empty: the first list's resources must not be
// applied behind it (simdjson's parse and nlohmann's alike: what looks like
// a "-0" sends the text to nlohmann). The declaration is refused whole.
TEST(DeclarationTest, AnEmptyLastResourcesListLeavesNoneOfTheFirst) {
  for (std::string content : {"pwn", "pwn [-0"}) {
    std::string text = R"({"machine": "m", "generation": 1,
      "resources": [{"id": "x", "kind": "file", "path": "/etc/x", "content": ")" +
                       content + R"("}], "resources": []})";
    auto d = ParseDeclaration(text);
    ASSERT_FALSE(d.has_value()) << content;
    EXPECT_THAT(d.error().message, HasSubstr("key \"resources\" appears twice")) << content;
  }
}

// A last "resources" that is not a list is refused, whatever came before.
TEST(DeclarationTest, ALastResourcesThatIsNotAListIsRefused) {
  for (std::string last : {"\"x\"", "{}", "7"}) {
    std::string text = R"({"machine": "m", "generation": 1,
      "resources": [{"id": "x", "kind": "file", "path": "/etc/x", "content": "pwn"}],
      "resources": )" + last +
                       "}";
    auto d = ParseDeclaration(text);
    ASSERT_FALSE(d.has_value()) << last;
    EXPECT_THAT(d.error().message, HasSubstr("resources")) << last;
  }
}

TEST(DeclarationTest, DeepNesting) {
  std::string deep(10000, '[');
  auto d = ParseDeclaration("{\"machine\": " + deep);
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("nested deeper"));
}

TEST(DeclarationTest, UnknownKind) {
  json doc = Base();
  doc["resources"][0]["kind"] = "command";
  EXPECT_THAT(Refusal(doc),
              HasSubstr("resource fail2ban.jail, field kind: unknown kind \"command\""));
}

TEST(DeclarationTest, UnknownFieldCannotSmuggleACommand) {
  json doc = Base();
  doc["resources"][2]["exec"] = "rm -rf /";
  EXPECT_THAT(Refusal(doc), HasSubstr("resource fail2ban.service, field exec: unknown field"));
}

// An unknown key is named, but only its first 64 bytes: a refusal of 50
// problems must not carry 50 keys of megabytes. Before, a key was echoed
// whole, at the top level and in a resource.
TEST(DeclarationTest, AnUnknownKeyIsNamedBounded) {
  std::string key = "x" + std::string(10000, 'k');
  json doc = Base();
  doc[key] = 1;
  doc["resources"][0][key] = "v";
  auto d = ParseDeclaration(doc.dump());
  ASSERT_FALSE(d);
  std::string cut = key.substr(0, 64) + "...";
  EXPECT_THAT(d.error().details,
              ::testing::Contains("declaration, field " + cut + ": unknown field"));
  EXPECT_THAT(d.error().details,
              ::testing::Contains(HasSubstr(", field " + cut + ": unknown field for kind")));
  for (const std::string& line : d.error().details) EXPECT_LT(line.size(), 300u) << line;
}

// Named the same whatever order the writer put the fields in.
TEST(DeclarationTest, SeveralUnknownFieldsAreNamedInSortedOrder) {
  std::string file = R"({"zz": "1", "id": "a", "kind": "file", "path": "/a", "content": "",)"
                     R"( "mm": "2"})";
  auto d = ParseDeclaration(R"({"machine": "m", "generation": 1, "resources": [)" + file + "]}");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("resource a, field mm: unknown field for kind file"));
  EXPECT_THAT(d.error().details,
              ::testing::ElementsAre(HasSubstr("resource a, field mm: unknown field"),
                                     HasSubstr("resource a, field zz: unknown field")));
}

// SPEC: every refusal found, each naming resource and field. A resource
// with three fields wrong names all three, not only the first: fixing a
// declaration should not take one run per mistake.
TEST(DeclarationTest, EveryWrongFieldOfOneResourceIsNamed) {
  auto details = [](const std::string& resource) {
    auto d =
        ParseDeclaration(R"({"machine": "m", "generation": 1, "resources": [)" + resource + "]}");
    return d ? std::vector<std::string>{"accepted"} : d.error().details;
  };
  EXPECT_THAT(details(R"({"id": "a", "kind": "file", "path": "rel", "content": "x",)"
                      R"( "mode": "999", "owner": "a b", "colour": "red"})"),
              ::testing::ElementsAre(HasSubstr("resource a, field colour: unknown field"),
                                     HasSubstr("resource a, field path: "),
                                     HasSubstr("resource a, field mode: "),
                                     HasSubstr("resource a, field owner: ")));
  EXPECT_THAT(details(R"({"id": "s", "kind": "service", "unit": "nginx", "state": "up",)"
                      R"( "enabled": "yes", "restart_on": "a"})"),
              ::testing::ElementsAre(HasSubstr("resource s, field unit: "),
                                     HasSubstr("resource s, field state: \"up\" is not"),
                                     HasSubstr("resource s, field enabled: "),
                                     HasSubstr("resource s, field restart_on: ")));
  // One mistake, one refusal: a field the kind does not have is not read.
  auto one_refusal = [](const std::string& resource) {
    auto d =
        ParseDeclaration(R"({"machine": "m", "generation": 1, "resources": [)" + resource + "]}");
    return d ? std::string("accepted") : d.error().message;
  };
  const std::string process =
      R"({"id": "p", "kind": "process", "path": "/opt/p", "source": "p.tgz", "sha256": ")" +
      std::string(64, 'a') + R"(", "unit": "p.service", "unit_text": "[Service]\n")";
  EXPECT_THAT(one_refusal(process + R"(, "reload_on": "x"})"),
              ::testing::StartsWith("resource p, field reload_on: unknown field for kind process"));
  EXPECT_THAT(one_refusal(process + R"(, "state": "triggered"})"),
              ::testing::StartsWith("resource p, field state: unknown field for kind process"));
  EXPECT_THAT(details(R"({"id": "b", "kind": "archive", "path": "/opt/b"})"),
              ::testing::ElementsAre(HasSubstr("resource b, field sha256: missing"),
                                     HasSubstr("resource b, field source: missing")));
  // A field judged against another is judged only once both read right: a
  // unit that is not a unit is not also refused a reload.
  auto one = ParseDeclaration(
      R"({"machine": "m", "generation": 1, "resources": [{"id": "t", "kind": "service",)"
      R"( "unit": "t", "state": "running", "reload_on": ["x"]}]})");
  ASSERT_FALSE(one);
  EXPECT_THAT(one.error().message, ::testing::StartsWith("resource t, field unit: "));
  EXPECT_THAT(one.error().details, ::testing::IsEmpty());
}

// Issue 40: a near miss is named.
TEST(DeclarationTest, AMistypedFieldOrKindSaysWhatWasMeant) {
  auto refusal = [](const std::string& resource) {
    auto d =
        ParseDeclaration(R"({"machine": "m", "generation": 1, "resources": [)" + resource + "]}");
    return d ? std::string() : d.error().message;
  };
  EXPECT_THAT(refusal(R"({"id": "a", "kind": "file", "path": "/a", "contnet": "x"})"),
              HasSubstr("field contnet: unknown field for kind file (did you mean \"content\"?)"));
  EXPECT_THAT(refusal(R"({"id": "s", "kind": "service", "unit": "s.service", "state": "running",)"
                      R"( "restart-on": ["a"]})"),
              HasSubstr("(did you mean \"restart_on\"?)"));
  EXPECT_THAT(refusal(R"({"id": "a", "kind": "flie", "path": "/a", "content": "x"})"),
              HasSubstr("unknown kind \"flie\" (expected file, credential, directory, symlink, "
                        "archive, service or process) (did you mean \"file\"?)"));
  EXPECT_THAT(refusal(R"({"id": "a", "kind": "file", "path": "/a", "xyzzy": "x"})"),
              ::testing::Not(HasSubstr("did you mean")));
  // on_failure: the two words, and rollback only for a unit kept running.
  EXPECT_THAT(refusal(R"({"id": "s", "kind": "service", "unit": "s.service", "state": "running",)"
                      R"( "on_failure": "retry"})"),
              HasSubstr("field on_failure: \"retry\" is not fail or rollback"));
  EXPECT_THAT(refusal(R"({"id": "s", "kind": "service", "unit": "s.service", "state": "stopped",)"
                      R"( "on_failure": "rollback"})"),
              HasSubstr("field on_failure: rollback needs state running"));
  EXPECT_THAT(refusal(R"({"id": "a", "kind": "file", "path": "/a", "content": "x",)"
                      R"( "on_failure": "rollback"})"),
              HasSubstr("field on_failure: unknown field for kind file"));
  EXPECT_EQ(refusal(R"({"id": "s", "kind": "service", "unit": "s.service", "state": "running",)"
                    R"( "on_failure": "fail"})"),
            "");
}

TEST(DeclarationTest, AResourceOfHundredsOfFieldsIsRefusedAsSuch) {
  std::string file = R"({"id": "a", "kind": "file", "path": "/a", "content": "")";
  for (int i = 0; i < 500; ++i) file += ", \"f" + std::to_string(i) + "\": \"v\"";
  file += "}";
  auto d = ParseDeclaration(R"({"machine": "m", "generation": 1, "resources": [)" + file + "]}");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("resource a: more than 64 fields"));
  // Its id after the 64th key: still refused as such, not as missing an id.
  std::string late = "{";
  for (int i = 0; i < 70; ++i) late += "\"f" + std::to_string(i) + "\": \"v\", ";
  late += R"("id": "b", "kind": "file", "path": "/b", "content": ""})";
  d = ParseDeclaration(R"({"machine": "m", "generation": 1, "resources": [)" + late + "]}");
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("resource #0: more than 64 fields"));
}

TEST(DeclarationTest, AResourceThatIsNotAnObject) {
  json doc = Base();
  doc["resources"].push_back("fail2ban.jail");
  doc["resources"].push_back(json::array({"id", "x"}));
  auto d = ParseDeclaration(doc.dump());
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("resource #4: must be an object"));
  EXPECT_THAT(d.error().message, HasSubstr("resource #5: must be an object"));
}

TEST(DeclarationTest, UnknownTopLevelField) {
  json doc = Base();
  doc["hooks"] = json::array();
  EXPECT_THAT(Refusal(doc), HasSubstr("field hooks: unknown field"));
}

TEST(DeclarationTest, MissingField) {
  json doc = Base();
  doc["resources"][0].erase("path");
  EXPECT_THAT(Refusal(doc), HasSubstr("resource fail2ban.jail, field path: missing"));
  doc = Base();
  doc["resources"][3].erase("sha256");
  EXPECT_THAT(Refusal(doc), HasSubstr("resource node-tools.runtime, field sha256: missing"));
  doc = Base();
  doc.erase("generation");
  EXPECT_THAT(Refusal(doc), HasSubstr("field generation: missing"));
}

TEST(DeclarationTest, ContentAndBase64Together) {
  json doc = Base();
  doc["resources"][0]["content_base64"] = "eA==";
  EXPECT_THAT(Refusal(doc), HasSubstr("exactly one of content and content_base64"));
}

TEST(DeclarationTest, BadBase64) {
  json doc = Base();
  doc["resources"][1]["content_base64"] = "c2Vj*mV0";
  EXPECT_THAT(Refusal(doc), HasSubstr("resource node-tools.token, field content_base64"));
}

TEST(DeclarationTest, DuplicateId) {
  json doc = Base();
  doc["resources"][1]["id"] = "fail2ban.jail";
  EXPECT_THAT(Refusal(doc), HasSubstr("resource fail2ban.jail, field id: duplicate id"));
}

TEST(DeclarationTest, IdPattern) {
  for (const char* bad : {"Upper", "-lead", "sp ace", "a/b", ""}) {
    json doc = Base();
    doc["resources"][0]["id"] = bad;
    EXPECT_THAT(Refusal(doc), HasSubstr("field id")) << bad;
  }
}

TEST(DeclarationTest, RestartOnUnknownId) {
  json doc = Base();
  doc["resources"][2]["restart_on"] = {"nope"};
  EXPECT_THAT(
      Refusal(doc),
      HasSubstr("resource fail2ban.service, field restart_on: names unknown resource \"nope\""));
  doc = Base();
  doc["resources"][2]["reload_on"] = {"missing.too"};
  EXPECT_THAT(Refusal(doc), HasSubstr("field reload_on: names unknown resource"));
}

TEST(DeclarationTest, PathNotAbsoluteOrWithDotDot) {
  json doc = Base();
  doc["resources"][0]["path"] = "etc/x";
  EXPECT_THAT(Refusal(doc),
              HasSubstr("resource fail2ban.jail, field path: \"etc/x\" is not absolute"));
  doc["resources"][0]["path"] = "/etc/../root/.ssh/authorized_keys";
  EXPECT_THAT(Refusal(doc), HasSubstr("contains .."));
  doc["resources"][0]["path"] = "/etc//x";
  EXPECT_THAT(Refusal(doc), HasSubstr("not in normal form"));
}

// After an interrupted apply the host deletes what is named as its
// temporaries are, in every directory it writes into: a path or unit so
// named was deleted, then reported `unchanged … as declared`.
TEST(DeclarationTest, NoPathOrUnitNamedAsTheHostsTemporaries) {
  json doc = Base();
  for (const char* path : {"/opt/.keep.mesh-host-tmp.4000000.0", "/opt/.t.mesh-host-tmp.1.0/x"}) {
    doc["resources"][0]["path"] = path;
    EXPECT_THAT(Refusal(doc), HasSubstr("is named as the host's temporary files are")) << path;
  }
  doc = Base();
  doc["resources"][2]["unit"] = ".x.mesh-host-tmp.1.0.service";
  EXPECT_THAT(Refusal(doc), HasSubstr("field unit: \".x.mesh-host-tmp.1.0.service\" is named as"));
  for (const char* path : {"/opt/keep.mesh-host-tmp.1.0", "/opt/.mesh-host-tmp"}) {
    doc = Base();
    doc["resources"][0]["path"] = path;
    auto d = ParseDeclaration(doc.dump());
    EXPECT_TRUE(d.has_value()) << path << ": " << d.error().message;
  }
}

// Issue 39 (9): the shipped unit's PrivateDevices= gives the host a /dev of
// its own, and /proc and /sys are the kernel's: a file declared there would
// not be where anyone looks. Refused, saying why; /devices or /system are
// ordinary paths.
TEST(DeclarationTest, NoFileUnderWhatTheKernelMakes) {
  json doc = Base();
  for (const char* path : {"/dev/x", "/dev/shm/x", "/proc/sys/vm/swappiness", "/sys/x", "/dev"}) {
    doc["resources"][0]["path"] = path;
    EXPECT_THAT(Refusal(doc), HasSubstr(std::string("resource fail2ban.jail, field path: \"") +
                                        path + "\" is under /"))
        << path;
    EXPECT_THAT(Refusal(doc), HasSubstr("mesh-host declares no files there")) << path;
  }
  for (const char* path : {"/devices/x", "/system/x", "/etc/dev"}) {
    doc["resources"][0]["path"] = path;
    auto d = ParseDeclaration(doc.dump());
    EXPECT_TRUE(d.has_value()) << path << ": " << d.error().message;
  }
}

TEST(DeclarationTest, TwoResourcesClaimOnePath) {
  json doc = Base();
  doc["resources"][1]["path"] = "/etc/fail2ban/jail.d/mesh.conf";
  EXPECT_THAT(Refusal(doc),
              HasSubstr("resource node-tools.token, field path: \"/etc/fail2ban/jail.d/mesh.conf\" "
                        "is also claimed by resource fail2ban.jail"));
}

TEST(DeclarationTest, FileInsideABundleDirectoryClashes) {
  json doc = Base();
  doc["resources"][0]["path"] = "/opt/node-tools/bin/serve";
  EXPECT_THAT(Refusal(doc), HasSubstr("is also claimed by resource fail2ban.jail"));
  doc = Base();
  doc["resources"][1]["path"] = "/opt/node-tools/extra";  // declared before the bundle
  std::swap(doc["resources"][1], doc["resources"][3]);
  EXPECT_THAT(Refusal(doc), HasSubstr("is also claimed by resource node-tools.runtime"));
}

// Only a directory holds other declared paths. A file under a file (or a
// credential, or a symlink) could never be written: each apply writes the
// first and fails the other, "a directory is in the way". Either order.
TEST(DeclarationTest, APathUnderAFileIsRefused) {
  for (const char* above : {"file", "credential", "symlink"}) {
    json holder = {{"id", "holder"}, {"kind", above}, {"path", "/etc/mesh"}};
    if (std::string(above) == "symlink") {
      holder["target"] = "/srv";
    } else {
      holder["content"] = "x";
    }
    for (bool first : {true, false}) {
      json doc = Base();
      auto& list = doc["resources"];
      list.insert(first ? list.begin() : list.end(), holder);
      EXPECT_THAT(Refusal(doc),
                  HasSubstr("resource node-tools.token, field path: \"/etc/mesh/node-tools.token\" "
                            "lies under the path of resource holder, which is not a directory"))
          << above << (first ? " first" : " last");
    }
  }
  json doc = Base();
  doc["resources"].push_back(
      {{"id", "holder"}, {"kind", "directory"}, {"path", "/etc/mesh"}, {"mode", "0700"}});
  auto d = ParseDeclaration(doc.dump());
  EXPECT_TRUE(d.has_value()) << "a directory holds them: " << d.error().message;
}

TEST(DeclarationTest, ASymlinkTargetFitsWhatTheKernelKeeps) {
  json doc = Base();
  json link = {{"id", "link"}, {"kind", "symlink"}, {"path", "/etc/link"}};
  link["target"] = "/" + std::string(4094, 'a');
  doc["resources"].push_back(link);
  auto d = ParseDeclaration(doc.dump());
  EXPECT_TRUE(d.has_value()) << d.error().message;
  doc["resources"].back()["target"] = "/" + std::string(4095, 'a');
  EXPECT_THAT(Refusal(doc), HasSubstr("field target: must be a path of 1 to 4095 bytes"));
}

TEST(DeclarationTest, InvalidUnitName) {
  for (const char* bad :
       {"fail2ban", "fail2ban.exe", "foo@.service", "a b.service", "x/y.service"}) {
    json doc = Base();
    doc["resources"][2]["unit"] = bad;
    EXPECT_THAT(Refusal(doc), HasSubstr("resource fail2ban.service, field unit")) << bad;
  }
}

TEST(DeclarationTest, TwoResourcesClaimOneUnit) {
  json doc = Base();
  doc["resources"][3]["unit"] = "fail2ban.service";
  EXPECT_THAT(Refusal(doc), HasSubstr("is also claimed by resource fail2ban.service"));
}

TEST(DeclarationTest, BadMode) {
  for (const char* bad : {"0999", "rw-r--r--", "12", "07777a"}) {
    json doc = Base();
    doc["resources"][0]["mode"] = bad;
    EXPECT_THAT(Refusal(doc), HasSubstr("resource fail2ban.jail, field mode")) << bad;
  }
  json doc = Base();
  doc["resources"][0]["mode"] = 420;
  EXPECT_THAT(Refusal(doc), HasSubstr("field mode: must be a string"));
  // A mode written as a number is told how to write it.
  doc["resources"][0]["mode"] = 644;
  EXPECT_THAT(Refusal(doc), HasSubstr("field mode: must be a string of octal digits: write it "
                                      "as \"0644\""));
  // Base64 as `base64` wraps it: the line break is named, not the length.
  doc = Base();
  doc["resources"][0].erase("content");
  doc["resources"][0]["content_base64"] = "aGVsbG8g\nd29ybGQ=";
  EXPECT_THAT(Refusal(doc), HasSubstr("base64 holds a blank or line break at offset 8: write it "
                                      "on one line (base64 -w0)"));
}

TEST(DeclarationTest, BadState) {
  json doc = Base();
  doc["resources"][2]["state"] = "restarted";
  EXPECT_THAT(Refusal(doc),
              HasSubstr("field state: \"restarted\" is not running, stopped or triggered"));
}

TEST(DeclarationTest, BadSha256AndSource) {
  json doc = Base();
  doc["resources"][3]["sha256"] = "abc";
  EXPECT_THAT(Refusal(doc), HasSubstr("field sha256: must be 64 hex digits"));
  doc = Base();
  doc["resources"][3]["source"] = "../../etc/shadow";
  EXPECT_THAT(Refusal(doc), HasSubstr("field source"));
}

TEST(DeclarationTest, NegativeGeneration) {
  json doc = Base();
  doc["generation"] = -1;
  EXPECT_THAT(Refusal(doc), HasSubstr("field generation: must be a non-negative integer"));
}

TEST(DeclarationTest, ContentSizeLimit) {
  json doc = Base();
  doc["resources"][0]["content"] = std::string(kMaxContentBytes + 1, 'x');
  EXPECT_THAT(Refusal(doc), HasSubstr("exceeds the limit"));
}

TEST(DeclarationTest, SelfReference) {
  json doc = Base();
  doc["resources"][2]["restart_on"] = {"fail2ban.service"};
  EXPECT_THAT(Refusal(doc), HasSubstr("names the resource itself"));
}

}  // namespace
}  // namespace mesh::core

namespace mesh::core {
namespace {

// Issue 20: only the first refusal was reported, so fixing a declaration
// took one run per mistake. Every one is named, one per line, escaped,
// bounded.
TEST(DeclarationTest, EveryRefusalIsReportedNotOnlyTheFirst) {
  json decl = {{"machine", "m"},
               {"generation", 1},
               {"resources",
                {{{"id", "a"}, {"kind", "file"}, {"path", "etc/x"}, {"content", "x"}},
                 {{"id", "s"},
                  {"kind", "service"},
                  {"unit", "nginx"},
                  {"state", "running"},
                  {"restart_on", {"a"}}},
                 {{"id", "b"}, {"kind", "file"}, {"path", "/x"}, {"content", "x"}},
                 {{"id", "c"}, {"kind", "file"}, {"path", "/x"}, {"content", "y"}},
                 {{"id", "x\nfailed"}, {"kind", "file"}, {"path", "/z"}, {"content", "z"}}}}};
  auto r = ParseDeclaration(decl.dump());
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(
      r.error().details,
      ::testing::ElementsAre(
          "resource a, field path: \"etc/x\" is not absolute: a path starts with \"/\" (such "
          "as \"/etc/x\")",
          "resource s, field unit: \"nginx\" has no unit type suffix: say which unit, such as "
          "\"nginx.service\" (.service, .socket, .timer, .path, .target, .mount)",
          "resource x\nfailed, field id: \"x\nfailed\" does not match [a-z0-9][a-z0-9._-]*",
          "resource c, field path: \"/x\" is also claimed by resource b"));
  EXPECT_THAT(r.error().message, ::testing::StartsWith("4 problems: resource a, field path: "));

  // A problem of the top level hid every resource's: all are named.
  json top = {{"machine", ""},
              {"generation", -1},
              {"extra", 1},
              {"resources", {{{"id", "A"}, {"kind", "file"}, {"path", "/a"}, {"content", ""}}}}};
  auto both = ParseDeclaration(top.dump());
  ASSERT_FALSE(both.has_value());
  EXPECT_THAT(
      both.error().details,
      ::testing::ElementsAre("declaration, field extra: unknown field",
                             "declaration, field machine: must be a non-empty string",
                             "declaration, field generation: must be a non-negative integer",
                             ::testing::StartsWith("resource A, field id: ")));

  json many = {{"machine", "m"}, {"generation", 1}, {"resources", json::array()}};
  for (int i = 0; i < 60; ++i) {
    many["resources"].push_back(
        {{"id", "r" + std::to_string(i)}, {"kind", "file"}, {"path", "rel"}, {"content", ""}});
  }
  auto bounded = ParseDeclaration(many.dump());
  ASSERT_FALSE(bounded.has_value());
  EXPECT_THAT(bounded.error().message, ::testing::StartsWith("60 problems: "));
  ASSERT_EQ(bounded.error().details.size(), 51u);
  EXPECT_EQ(bounded.error().details.back(), "... and 10 more");
}

}  // namespace
}  // namespace mesh::core

namespace mesh::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Issue 39 (7): a key given twice was read as its last value (`path`,
// `machine`, `generation` included): what one reader applies is not what
// another shows. Refused, naming the key and the resource, with either
// parser, and without quoting a value.
TEST(DeclarationTest, AKeyGivenTwiceIsRefusedNamingItAndTheResource) {
  auto refusal = [](std::string_view text) {
    auto parsed = ParseDeclaration(text);
    return parsed ? std::string("accepted") : parsed.error().message;
  };
  EXPECT_EQ(refusal(R"({"machine":"a","machine":"b","generation":1,"resources":[]})"),
            "declaration: key \"machine\" appears twice at the top level");
  EXPECT_EQ(refusal(R"({"machine":"a","generation":1,"resources":[
      {"id":"app.conf","kind":"file","path":"/etc/a","content":"x","path":"/etc/shadow"}]})"),
            "declaration: key \"path\" appears twice in resources[0] (id \"app.conf\")");
  EXPECT_EQ(refusal(R"({"machine":"a","generation":1,"resources":[
      {"id":"w","kind":"file","path":"/a","content":"x"},
      {"id":"s","kind":"service","unit":"s.service","state":"running",
       "drop_ins":{"a.conf":"x","a.conf":"y"}}]})"),
            "declaration: key \"a.conf\" appears twice in resources[1] (id \"s\")");
  std::string secret = refusal(R"({"machine":"a","generation":1,"resources":[
      {"id":"t","kind":"credential","path":"/t","content":"hunter2","content":"hunter3"}]})");
  EXPECT_THAT(secret, HasSubstr("key \"content\" appears twice"));
  EXPECT_THAT(secret, Not(HasSubstr("hunter")));
  EXPECT_THAT(refusal(R"({"machine":"a","generation":1,"resources":[],"resources":[]})"),
              HasSubstr("key \"resources\" appears twice at the top level"));
  // -0 sends the text to nlohmann alone: the same refusal.
  EXPECT_EQ(refusal(R"({"machine":"a","generation":1,"x":-0,"generation":2,"resources":[]})"),
            "declaration: key \"generation\" appears twice at the top level");
}

}  // namespace
}  // namespace mesh::core
