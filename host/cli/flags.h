// The command line of SPEC "Command line": verbs, flags and their defaults.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "host/core/result.h"

namespace mesh::cli {

// SPEC: a shorter --settle would switch the second look off.
inline constexpr std::chrono::milliseconds kMinSettle{100};
// Shorter, `run` applies without pause, hundreds of times a second, each
// apply a line of the log.
inline constexpr std::chrono::seconds kMinInterval{1};

enum class Verb { kRun, kApply, kPlan, kValidate, kStatus, kHelp, kVersion };

struct Flags {
  Verb verb = Verb::kHelp;
  // kHelp: the verb whose help was asked for (kHelp: all of them).
  Verb help_for = Verb::kHelp;
  std::string declaration = "/etc/mesh-host/declaration.json";
  std::string state_dir = "/var/lib/mesh-host";
  std::string root = "/";
  std::string artifacts = "/var/lib/mesh-host/artifacts";
  std::string unit_dir = "/etc/systemd/system";
  // Where a failed unit's journal lines are read: empty, this machine's
  // system journal; else a journal directory (a container's).
  std::string journal_dir;
  std::string listen = "127.0.0.1:9479";
  std::chrono::nanoseconds interval = std::chrono::minutes(5);
  std::chrono::nanoseconds settle = std::chrono::seconds(1);
  std::string machine;  // empty: the host name
  std::string url = "http://127.0.0.1:9479";
  // status: every --url given (more than one: the fleet table), and a
  // Prometheus file_sd file of more.
  std::vector<std::string> urls;
  std::string targets;                    // the last --targets
  std::vector<std::string> target_files;  // every --targets given
  std::string prometheus;                 // status --prometheus URL
  // status, reaching a host behind its --web-config: the CA that signed its
  // certificate, a client certificate and key, a basic-auth user (the
  // password from --password-file or MESH_HOST_PASSWORD, never argv).
  std::string ca, cert, key, user, password_file;
  // status: the whole command's deadline.
  std::chrono::nanoseconds status_timeout = std::chrono::seconds(10);
  // run: the exporter-toolkit web config (TLS, basic auth, headers).
  std::string web_config;
  // run: log every outcome at every apply, `unchanged` ones included
  // (default: changes, failures and one summary line per apply):
  // --verbose, or --log-level debug.
  bool verbose = false;
  std::string log_level = "info";
  // run: `all` keeps a change counter for every resource that changed;
  // `failing` only for failed and churning ones (SPEC "Metrics").
  std::string metrics_resources = "all";
  // A minisign public key: every declaration must then be signed by it.
  std::string verify_key;
  // plan: a unified diff of each change after the outcome lines.
  bool diff = false;
  // --artifacts was given, not left at its default: validate then refuses
  // a declaration whose bundles it cannot read there, as apply would.
  bool artifacts_given = false;
  // --root was given: validate then refuses a declared path that has a
  // symlink on the way under it, as apply would; left at / (validate run
  // where the declaration is built, another machine), it only warns.
  bool root_given = false;
  // Flags given that the verb does not use, each in words: said on
  // stderr, then ignored.
  std::vector<std::string> ignored;
  // apply, plan: `--output text` (the lines) or `--output json`.
  std::string output = "text";
};

// Parses argv (without argv[0]). Errors name the flag or verb at fault.
core::Result<Flags> ParseFlags(const std::vector<std::string>& args);

std::string UsageText();
// One verb's: what it does, its exit codes and its flags only.
std::string UsageText(Verb verb);

}  // namespace mesh::cli
