#!/usr/bin/env bash
# The docs in the order a reader meets them, on one machine — one shell, as
# one terminal would be, each page's commands as written, as root in a real
# systemd's box (sdbox.sh) with /etc, /opt, /srv, /usr/local and /var/lib
# copy-on-write there. What one page leaves (a running service, a recorded
# generation, the working directory) is what the next one meets. The order
# is the arguments (PAGE:HOW, HOW as below); by default the README's
# (its example applied, then the service installed and running), then
# troubleshooting.md's starting over (of that service), then
# examples/README.md, then docs/quickstart.md, then docs/declaration.md's
# signing. BUILD runs the order the quickstart's own "Next:" sends a newcomer
# too. Each page alone is run by its own test (commands_test.sh,
# examples_test.sh, quickstart_test.sh); a page given commands to run is
# added here, or this test fails.
. "$PWD/tests/systemd/box_suite.sh" reader
for port in 8931 9479 9480; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "SKIP (LOUD): 127.0.0.1:$port is in use on this machine; a page's service would not listen"
    finish; exit
  fi
done
box_cow /etc /opt /srv /usr/local /var/lib
W=$T/work
mkdir -p "$W/bazel-bin/host" "$T/bin" "$T/home" "$T/tmp"
cp -rL README.md docs examples packaging "$W/"
cp "$BIN" "$(dirname "$BIN")/mesh-host-serve" "$W/bazel-bin/host/"
cp "$BIN" "$(dirname "$BIN")/mesh-host-serve" "$T/bin/"
machine=$(inside hostname)
# The operator's own declaration, as the README and declaration.md assume
# one (the quickstart's page makes its own).
printf '{"machine": "%s", "generation": 1, "resources": [{"id": "motd", "kind": "file", "path": "/etc/motd.d/mesh", "content": "managed\\n"}]}\n' \
  "$machine" | tee "$W/my-declaration.json" > "$W/declaration.json"

# The pages in reading order, and how each is read: "marked" runs the blocks
# marked for commands_test.sh, "all" every ```sh block (the pages whose own
# test runs them whole). README.md's tools/demo and tools/test block is
# CI's, not a reader's step here.
PAGES=("README.md marked" "docs/troubleshooting.md marked" "examples/README.md all"
       "docs/quickstart.md all" "docs/declaration.md marked")
[ $# = 0 ] || PAGES=("${@/:/ }")
echo "order: ${PAGES[*]%% *}"
# The pages run whole are commands_check.py's WHOLE; the others' marked
# blocks are commands_test.sh's.
whole=$(sed -n '/^WHOLE = {/,/}$/p' tests/docs/commands_check.py | grep -o '"[^"]*\.md":' | tr -d '":')
runnable=$( (grep -l '^<!-- tested: tests/docs/commands_test.sh -->$' README.md docs/*.md examples/README.md;
             printf '%s\n' $whole) | sort -u | tr '\n' ' ')
named=$(printf '%s\n' "${PAGES[@]}" | cut -d' ' -f1 | sort | tr '\n' ' ')
check "every page with commands to run is read here ($runnable)" '[ "$runnable" = "$named" ]'
{
  echo 'set -euo pipefail'
  echo "export PATH=/usr/local/bin:\$PATH:$T/bin HOME=$T/home TMPDIR=$T/tmp"
  echo 'unset DBUS_SYSTEM_BUS_ADDRESS  # in the box, the default bus is its own'
  echo 'bazel() { [ "$*" = "build //host:mesh-host" ]; }  # built: this test depends on it'
  echo "cd $W  # the repository's top directory, where the README and examples/ start"
  for entry in "${PAGES[@]}"; do
    set -- $entry
    echo "echo '=== $1'"
    # The README and examples/README.md are read from the repository's top
    # directory; the other pages go on where the last one left the reader.
    case $1 in README.md | examples/README.md) echo "cd $W" ;; esac
    case $2 in
      marked) awk '/^<!-- tested: tests\/docs\/commands_test.sh -->$/ {mark=1; next}
                   mark && /^```sh$/ {on=1; mark=0; next} {mark=0} /^```$/ {on=0} on' "$1" ;;
      all) awk '/^```sh$/ {on=1; next} /^```$/ {on=0} on' "$1" ;;
    esac
  done
  echo "echo '=== end'"
} > "$T/steps.sh"
set +e
inside timeout 240 bash "$T/steps.sh" > "$T/out" 2>&1  # within Bazel's 300 s for a medium test
rc=$?
set -e
sed 's/^/    /' "$T/out"
reached=$(grep '^=== ' "$T/out" | tail -1)
check "every page ran as written, in reading order (exit 0; last page begun: ${reached#=== })" '[ "$rc" = 0 ] && [ "$reached" = "=== end" ]'
# A page's output. Read whole (grep <<<"$(page …)"), not piped into a grep
# -q that may leave first: under pipefail, awk's SIGPIPE would fail the check.
page() { awk -v p="=== $1" '$0 == p {on=1; next} /^=== / {on=0} on' "$T/out"; }
check "README: the installed service runs" 'grep -Eq "^machine $machine +generation 1 +HEALTHY" <<<"$(page README.md)"'
check "examples: the web example applies" 'grep -q "^created web (service): wrote unit file web.service, running as web.service" <<<"$(page examples/README.md)"'
check "quickstart: its first apply creates all four" \
  '[ "$(grep -cE "^created hello\.[a-z]+ \([a-z]+\): (wrote|unpacked) " <<<"$(page docs/quickstart.md)")" = 4 ]'
check "quickstart: the refused config is caught" 'grep -q "^failed hello.service (service): failed (Result=exit-code)" <<<"$(page docs/quickstart.md)"'
check "declaration.md: the signature verifies; the signed declaration applies" \
  'grep -q "^Signature and comment signature verified" <<<"$(page docs/declaration.md)" && grep -q "^mesh-host: apply of generation [0-9]*: [0-9]* resource(s), 0 failed" <<<"$(page docs/declaration.md)"'
# The host's units, and the README's service the pages stopped (app.service,
# the examples' stand-in for a unit of the machine's own, stays as a
# machine's would).
# The README ends with its service installed and running, over the
# operator's own declaration; the quickstart and examples/ stop it.
readme_at=-1 stopped_at=-1
for i in "${!PAGES[@]}"; do
  case ${PAGES[i]%% *} in
    README.md) readme_at=$i ;;
    docs/quickstart.md | examples/README.md) stopped_at=$i ;;
  esac
done
if [ "$readme_at" -gt "$stopped_at" ]; then
  check "the README's service is left running, as its page leaves it" \
    '[ "$(inside systemctl is-active mesh-host)" = active ]'
else
  left=$(inside systemctl show hello.service web.service greeter.service motd-render.service mesh-host.service -p ActiveState --value | grep . | sort -u | tr '\n' ' ')
  check "nothing the host started is left running, nor the stopped service (${left% })" '[ "$left" = "inactive " ]'
fi
inside systemctl stop mesh-host web.service 2>/dev/null || true
finish
