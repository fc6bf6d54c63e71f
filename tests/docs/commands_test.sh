#!/usr/bin/env bash
# The shell blocks of README.md and docs/ marked `<!-- tested:
# tests/docs/commands_test.sh -->`, run as written, as root, each page's in
# order, in a real systemd's box (sdbox.sh) with /etc, /opt, /srv, /usr/local
# and /var/lib copy-on-write there — the README's install runs
# packaging/install.sh and `systemctl enable --now mesh-host` for real.
# First commands_check.py: every block is run by some test, and every
# mesh-host command line the docs show parses.
# Given, as the pages say: the built binary where `bazel build` puts it (this
# test depends on //host:mesh-host; `bazel build` itself is not run inside a
# test), and `my-declaration.json` / `declaration.json`, the operator's own.
. "$PWD/tests/systemd/box_suite.sh" commands
check "every block has a test; every mesh-host line parses" 'python3 tests/docs/commands_check.py > "$T/check" 2>&1'
grep -v '^ok' "$T/check" | sed 's/^/    /'
if (exec 3<>/dev/tcp/127.0.0.1/9479) 2>/dev/null; then
  echo "SKIP (LOUD): 127.0.0.1:9479 is in use on this machine; the README's service would not listen"
  finish; exit
fi
box_cow /etc /opt /srv /usr/local /var/lib
W=$T/work
mkdir -p "$W/bazel-bin/host"
cp -rL README.md docs examples packaging "$W/"
cp "$BIN" "$W/bazel-bin/host/mesh-host"
cp "$(dirname "$BIN")/mesh-host-serve" "$W/bazel-bin/host/"
mkdir -p "$T/bin" && cp "$BIN" "$T/bin/mesh-host" && cp "$(dirname "$BIN")/mesh-host-serve" "$T/bin/"
machine=$(inside hostname)
printf '{"machine": "%s", "generation": 1, "resources": [{"id": "motd", "kind": "file", "path": "/etc/motd.d/mesh", "content": "managed\\n"}]}\n' \
  "$machine" | tee "$W/my-declaration.json" > "$W/declaration.json"

# run PAGE: its marked blocks, in order, in $W; output in $T/PAGE.out.
run() {
  local out=$T/$(tr / _ <<<"$1").out
  {
    echo 'set -euo pipefail'
    # mesh-host on the PATH, as the package installs it (after /usr/local/bin,
    # where the README's install.sh puts it).
    echo "export PATH=/usr/local/bin:\$PATH:$T/bin"
    echo 'unset DBUS_SYSTEM_BUS_ADDRESS  # in the box, the default bus is its own'
    echo "cd $W"
    echo 'bazel() { [ "$*" = "build //host:mesh-host" ]; }  # built: this test depends on it'
    awk '/^<!-- tested: tests\/docs\/commands_test.sh -->$/ {mark=1; next}
         mark && /^```sh$/ {on=1; mark=0; next} {mark=0} /^```$/ {on=0} on' "$1"
  } > "$T/steps.sh"
  set +e
  inside timeout 120 bash "$T/steps.sh" > "$out" 2>&1
  RC=$?
  set -e
  echo "  $1:"; sed 's/^/    /' "$out"
  OUT=$(cat "$out")
}
# The pages given, in that order, in one box; by default every page with a
# marked block but the README, each alone as far as one box allows: the
# README, which installs the service, and the pages whose blocks act on
# that service are run after it by a target of their own (BUILD), so the
# README too is met on a machine no other page has touched.
readme_group="README.md docs/troubleshooting.md"
if [ $# -gt 0 ]; then
  pages="$*"
  check "the pages given are those the default leaves out ($readme_group)" '[ "$pages" = "$readme_group" ]'
else
  pages=$(grep -l '^<!-- tested: tests/docs/commands_test.sh -->$' README.md docs/*.md examples/README.md | sort | grep -vxF $(printf -- '-e %s ' $readme_group))
fi
echo "pages: $pages"
for page in $pages; do
  run "$page"
  check "$page: its marked blocks run as written (exit 0)" '[ "$RC" = 0 ]'
  case $page in
    README.md)
      check "README: the example applies" 'grep -q "^created web (service): wrote unit file web.service, running as web.service" <<<"$OUT"'
      check "README: the installed service runs, enabled" \
        '[ "$(inside systemctl is-active mesh-host)" = active ] && [ "$(inside systemctl is-enabled mesh-host)" = enabled ]'
      check "README: mesh-host status shows it healthy" 'grep -Eq "^machine $machine +generation 1 +HEALTHY" <<<"$OUT"'
      record_before=$(inside stat -c %i /var/lib/mesh-host/state.json) ;;
    docs/troubleshooting.md)
      # Starting over: the service forgot its record and made it anew,
      # adopting the file it had written (nothing to write, so unchanged).
      # (A record that stayed would be kept as it is: a no-op writes none.)
      check "troubleshooting: started over, the service made its record anew" \
        'until_true 10 "inside test -s /var/lib/mesh-host/state.json" && [ "$(inside stat -c %i /var/lib/mesh-host/state.json)" != "$record_before" ] && [ "$(inside systemctl is-active mesh-host)" = active ] && inside grep -q "^managed" /etc/motd.d/mesh' ;;
    docs/declaration.md)
      check "declaration.md: the signature verifies; the signed declaration applies" \
        'grep -q "^Signature and comment signature verified" <<<"$OUT" && grep -q "^created motd (file)" <<<"$OUT"'
      check "... and the signature is checked (a changed declaration is refused)" \
        'echo " " >> "$W/declaration.json" && ! inside "$W/bazel-bin/host/mesh-host" plan --declaration "$W/declaration.json" --verify-key "$W/mesh.pub" >/dev/null 2>&1' ;;
  esac
done
inside systemctl stop mesh-host web.service 2>/dev/null || true
finish
