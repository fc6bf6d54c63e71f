#!/usr/bin/env bash
# libsystemd is loaded when mesh-host first talks to systemd: where it
# cannot be loaded (here an empty file bind-mounted over it, in a mount
# namespace of this test's own), the files of a declaration are still
# applied, each unit resource fails naming the library with its restart
# kept owed, and a daemon started as systemd would start it says in its
# log why systemd hears nothing from it.
set -euo pipefail
BIN="$PWD/host/mesh-host"
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/nolib.XXXXXX")
DAEMON=""
cleanup() {
  if [ -n "$DAEMON" ]; then
    kill "$DAEMON" 2>/dev/null || true
    wait "$DAEMON" 2>/dev/null || true
  fi
  # Whatever else runs on this test's own directory is this test's.
  pkill -f -- "--state-dir $T/state" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# awk reads to the end: one that stops at the first match would leave
# ldconfig writing into a closed pipe, and pipefail fails the assignment
# (silently, under set -e) whenever ldconfig has not finished by then.
lib=$(ldconfig -p | awk '/libsystemd\.so\.0 / && !lib {lib = $NF} END {print lib}')
[ -n "$lib" ] || fail "libsystemd.so.0 is not installed"
mkdir -p "$T/root" "$T/units"
: > "$T/empty"
cat > "$T/decl.json" <<'JSON'
{"machine": "e2e", "generation": 1, "resources": [
  {"id": "app.conf", "kind": "file", "path": "/etc/app/app.conf", "content": "port = 80\n"},
  {"id": "web", "kind": "service", "unit": "web.service", "state": "running",
   "unit_text": "[Service]\nExecStart=/bin/sleep infinity\n"}]}
JSON
F=(--declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" --unit-dir "$T/units" --machine e2e)
# Becomes "$@" where libsystemd.so.0 is an empty file (unshare -m: the mount
# is private to that namespace and goes with it). Exec all the way down, so
# that started with & its PID is the daemon's own, which cleanup stops; it
# replaces the shell that calls it, so call it only in a subshell.
without_libsystemd() {
  exec unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$T/empty" "$lib" "$@"
}

set +e
out=$(without_libsystemd "$BIN" apply "${F[@]}" 2>/dev/null); rc=$?
set -e
[ "$rc" = 1 ] || fail "apply exit $rc: $out"
grep -qx "created app.conf (file): wrote 10 byte(s), mode 0644" <<<"$out" || fail "file: $out"
grep -q "^failed web (service): libsystemd.so.0 could not be loaded: " <<<"$out" || fail "unit: $out"
[ "$(cat "$T/root/etc/app/app.conf")" = "port = 80" ] || fail "file not written"
grep -q '"web":{"action":"restart"' "$T/state/intent.json" || fail "restart not owed: $(cat "$T/state/intent.json")"
[ -s "$lib" ] || fail "the library outside the namespace was touched"

(NOTIFY_SOCKET="$T/notify" without_libsystemd "$BIN" run "${F[@]}" --listen 127.0.0.1:0 \
  --interval 1h 2>"$T/log") &
DAEMON=$!
for _ in $(seq 1 100); do grep -q "cannot notify systemd" "$T/log" && break; sleep 0.1; done
grep -q "cannot notify systemd (no READY=1, no watchdog): libsystemd.so.0 could not be loaded: " \
  "$T/log" || fail "daemon log: $(cat "$T/log")"
[ "$(cat /proc/$DAEMON/comm 2>/dev/null)" = mesh-host ] || fail "the daemon's PID is not the daemon's"
kill "$DAEMON" || fail "the daemon ended before it was stopped: $(cat "$T/log")"
wait "$DAEMON" 2>/dev/null || true
DAEMON=""
echo PASS
