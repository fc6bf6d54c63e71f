#!/usr/bin/env bash
# The built binary on a temporary root: apply, re-apply (unchanged, nothing
# written), a hand edit put back, a refused declaration that touches nothing,
# and plan that writes nothing.
set -euo pipefail
BIN="$PWD/host/mesh-host"
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/e2e.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/root" "$T/art" "$T/bundle/bin"
printf '#!/bin/sh\necho serve\n' > "$T/bundle/bin/serve"; chmod 755 "$T/bundle/bin/serve"
tar -C "$T/bundle" -czf "$T/art/tools.tar.gz" .
SHA=$(sha256sum "$T/art/tools.tar.gz" | cut -d' ' -f1)
cat > "$T/decl.json" <<JSON
{"machine": "e2e", "generation": 3, "resources": [
  {"id": "app.conf", "kind": "file", "path": "/etc/app/app.conf", "content": "port = 80\n"},
  {"id": "app.token", "kind": "credential", "path": "/etc/app/token", "content_base64": "czNjcjN0LVZhbHVl"},
  {"id": "app.tools", "kind": "archive", "path": "/opt/tools", "source": "tools.tar.gz", "sha256": "$SHA"}]}
JSON
# Issue 39: a declaration holding a credential that others can read is
# refused, naming the fix, and nothing is written; private, it applies.
chmod 0644 "$T/decl.json"
set +e
out=$("$BIN" apply --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/fresh/state" --artifacts "$T/art" --unit-dir "$T/fresh/units" --machine e2e 2>&1); rc=$?
# A key that cannot be read refuses before the declaration is read.
kout=$("$BIN" apply --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/fresh/state" --artifacts "$T/art" --unit-dir "$T/fresh/units" --machine e2e --verify-key "$T/no.pub" 2>&1); krc=$?
vout=$("$BIN" validate --declaration "$T/decl.json" 2>&1); vrc=$?
set -e
[ "$rc" = 2 ] || { echo "FAIL: readable declaration with a credential: exit $rc: $out" >&2; exit 1; }
grep -q "holds credentials (resource app.token) and users other than its owner can read it (mode 0644): chmod 0600 $T/decl.json" <<<"$out" || { echo "FAIL: refusal words: $out" >&2; exit 1; }
[ ! -e "$T/root/etc" ] || { echo "FAIL: a refused declaration wrote" >&2; exit 1; }
# Not even the state and unit directories (and their parents) it would have made.
[ ! -e "$T/fresh" ] || { echo "FAIL: a refused apply left $(find "$T/fresh" | tr '\n' ' ')" >&2; exit 1; }
[ "$krc" = 2 ] && grep -q "no.pub" <<<"$kout" || { echo "FAIL: unreadable key: exit $krc: $kout" >&2; exit 1; }
chmod 0600 "$T/decl.json"
# Refused only once its credential's digest key was made: the key goes too.
mkdir -p "$T/linked/elsewhere" && ln -s "$T/linked/elsewhere" "$T/linked/etc"
set +e
lout=$("$BIN" apply --declaration "$T/decl.json" --root "$T/linked" --state-dir "$T/fresh/state" --artifacts "$T/art" --unit-dir "$T/fresh/units" --machine e2e 2>&1); lrc=$?
set -e
[ "$lrc" = 2 ] && grep -q "/etc is a symlink" <<<"$lout" || { echo "FAIL: symlinked /etc: exit $lrc: $lout" >&2; exit 1; }
[ ! -e "$T/fresh" ] || { echo "FAIL: a refusal after the observation left $(find "$T/fresh" | tr '\n' ' ')" >&2; exit 1; }
# Spelled with "..", the longest name is not the deepest directory.
set +e
dout=$("$BIN" apply --declaration "$T/decl.json" --root "$T/linked" --state-dir "$T/fresh/b/s" --artifacts "$T/art" --unit-dir "$T/fresh/a/../b" --machine e2e 2>&1); drc=$?
set -e
[ "$drc" = 2 ] || { echo "FAIL: dotted: exit $drc: $dout" >&2; exit 1; }
[ ! -e "$T/fresh" ] || { echo "FAIL: a refusal with .. left $(find "$T/fresh" | tr '\n' ' ')" >&2; exit 1; }
[ "$vrc" = 2 ] && grep -q "chmod 0600" <<<"$vout" || { echo "FAIL: validate of it: $vrc $vout" >&2; exit 1; }
F=(--declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" --artifacts "$T/art" --unit-dir "$T/units" --machine e2e)
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$BIN" plan "${F[@]}")
[ ! -e "$T/root/etc" ] && [ ! -e "$T/state" ] || fail "plan wrote something"
grep -q "^created app.conf (file): would write" <<<"$out" || fail "plan output: $out"

out=$("$BIN" apply "${F[@]}") || fail "first apply exit $?"
grep -q "^created app.conf (file): wrote 10 byte(s), mode 0644$" <<<"$out" || fail "apply output: $out"
grep -q "^created app.tools (archive): unpacked 1 file(s)$" <<<"$out" || fail "apply output: $out"
! grep -q s3cr3t <<<"$out" || fail "credential content printed"
! grep -q s3cr3t "$T/state/state.json" || fail "credential content recorded"
[ "$(stat -c %a "$T/root/etc/app/token")" = 400 ] || fail "credential mode"
[ "$(stat -c %a "$T/state")" = 700 ] || fail "state dir mode"
[ "$(stat -c %a "$T/state/state.json")" = 600 ] || fail "state file mode"

m1=$(stat -c %Y.%y "$T/root/etc/app/app.conf" "$T/root/opt/tools/bin/serve")
out=$("$BIN" apply "${F[@]}") || fail "second apply exit $?"
[ "$(grep -c '^unchanged ' <<<"$out")" = 3 ] || fail "second apply not unchanged: $out"
[ "$(stat -c %Y.%y "$T/root/etc/app/app.conf" "$T/root/opt/tools/bin/serve")" = "$m1" ] || fail "unchanged apply wrote"

# libsystemd is loaded when mesh-host first talks to systemd, not at
# start: --version and an apply of files only never map it.
# (Into a file, then grep: grep -q ends at its match, and what it read from
# would then die of SIGPIPE and, under pipefail, fail the pipeline.)
loads_libsystemd() {
  LD_DEBUG=libs "$@" 2>"$T/ld.txt" >/dev/null || true
  grep -q 'calling init: .*/libsystemd\.so' "$T/ld.txt"
}
! loads_libsystemd "$BIN" --version || fail "--version loaded libsystemd"
! loads_libsystemd "$BIN" apply "${F[@]}" || fail "a files-only apply loaded libsystemd"
# Nor do they load the HTTP side, TLS or the metrics: those are
# mesh-host-serve's, which only `run` and `status` become.
serves() {
  LD_DEBUG=libs "$@" 2>"$T/ld.txt" >/dev/null || true  # status fails: nothing listens
  grep -Eq 'calling init: .*/lib(cpp-httplib|ssl|prometheus-cpp-core)\.so' "$T/ld.txt"
}
! serves "$BIN" --version || fail "--version loaded the HTTP side"
! serves "$BIN" apply "${F[@]}" || fail "an apply loaded the HTTP side"
serves "$BIN" status --url http://127.0.0.1:1 || fail "status did not become mesh-host-serve"
# A flag the verb ignores is said once: not by mesh-host and again by the
# mesh-host-serve it hands the same arguments to.
out=$("$BIN" status --url http://127.0.0.1:1 --output json 2>&1) || true
[ "$(grep -c 'flag --output is for apply, plan and validate: status does not use it' <<<"$out")" = 1 ] ||
  fail "the ignored flag was not said once: $out"
# libcrypt (bcrypt) is loaded only when the web config has basic_auth_users.
LD_DEBUG=libs "$BIN" status --url http://127.0.0.1:1 2>"$T/ld.txt" >/dev/null || true
! grep -q 'calling init: .*/libcrypt\.so' "$T/ld.txt" || fail "mesh-host-serve loaded libcrypt unasked"
# Only a mesh-host-serve that no one else could have put there, of the
# same build.
mkdir -m 1777 "$T/open"
cp "$BIN" "$T/open/mesh-host"
printf '#!/bin/sh\ntouch "%s/planted-ran"\n' "$T" > "$T/open/mesh-host-serve"
chmod 755 "$T/open/mesh-host-serve"
out=$("$T/open/mesh-host" status --url http://127.0.0.1:1 2>&1) && fail "status ran from a directory anyone can write"
[ ! -e "$T/planted-ran" ] || fail "a planted mesh-host-serve ran"
grep -q "$T/open is writable by others" <<<"$out" || fail "the refusal does not say why: $out"
out=$(MESH_HOST_FRONT_VERSION=0.0.0 "$(dirname "$BIN")/mesh-host-serve" status --url http://127.0.0.1:1 2>&1) &&
  fail "mesh-host-serve ran for another build's mesh-host"
grep -q "are not the same build" <<<"$out" || fail "the version refusal does not say why: $out"

echo "port = 8080" > "$T/root/etc/app/app.conf"
out=$("$BIN" apply "${F[@]}") || fail "drift apply exit $?"
grep -q "^updated app.conf (file): drifted" <<<"$out" || fail "drift not reported: $out"
[ "$(cat "$T/root/etc/app/app.conf")" = "port = 80" ] || fail "drift not put back"

cp "$T/state/state.json" "$T/state.before"
sed 's/"generation": 3/"generation": 3, "hooks": ["rm -rf \/"]/' "$T/decl.json" > "$T/bad.json"
set +e
err=$("$BIN" apply "${F[@]/$T\/decl.json/$T/bad.json}" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "bad declaration exit $rc"
grep -q "field hooks: unknown field" <<<"$err" || fail "refusal message: $err"
cmp -s "$T/state/state.json" "$T/state.before" || fail "refusal touched the record"

set +e
"$BIN" apply "${F[@]}" --machine other >/dev/null 2>&1; rc=$?
"$BIN" apply --no-such-flag >/dev/null 2>&1; rc2=$?
set -e
[ "$rc" = 2 ] && [ "$rc2" = 2 ] || fail "exit codes $rc $rc2"
"$BIN" --help | grep -- "--settle DURATION" >/dev/null || fail "--help"
# A FIFO (or a directory) where the declaration belongs is refused at once,
# never waited on, and leaves the record as it was.
mkfifo "$T/fifo.json"
set +e
err=$(timeout 10 "$BIN" apply "${F[@]/$T\/decl.json/$T/fifo.json}" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "FIFO declaration exit $rc (124: it hung)"
grep -q "fifo.json: not a regular file" <<<"$err" || fail "FIFO refusal message: $err"
cmp -s "$T/state/state.json" "$T/state.before" || fail "FIFO refusal touched the record"
# A declaration reached through a symlink may not be written over where it
# leads: a file declared at its target is refused (validate too), and the
# declaration stays as it was.
mkdir -p "$T/root/etc/mesh"
printf '{"machine": "e2e", "generation": 9, "resources": [{"id": "self", "kind": "file", "path": "/etc/mesh/gen-9.json", "content": "{}"}]}' > "$T/root/etc/mesh/gen-9.json"
ln -s "$T/root/etc/mesh/gen-9.json" "$T/current.json"
cp "$T/root/etc/mesh/gen-9.json" "$T/gen-9.before"
set +e
err=$("$BIN" apply "${F[@]/$T\/decl.json/$T/current.json}" 2>&1 >/dev/null); rc=$?
verr=$("$BIN" validate --declaration "$T/current.json" --root "$T/root" 2>&1); vrc=$?
set -e
[ "$rc" = 2 ] || fail "a file over the declaration's target: exit $rc: $err"
grep -q "overlaps the declaration itself (--declaration $T/current.json, which is $T/root/etc/mesh/gen-9.json)" <<<"$err" || fail "self through a link, words: $err"
[ "$vrc" = 2 ] && grep -q "overlaps the declaration itself" <<<"$verr" || fail "validate of it: $vrc $verr"
cmp -s "$T/root/etc/mesh/gen-9.json" "$T/gen-9.before" || fail "the declaration was written over"
cmp -s "$T/state/state.json" "$T/state.before" || fail "the refusal touched the record"
# Nor may anything be put at a link on the way to it: a file at the middle
# of current2.json -> mid.json -> gen-10.json, or at the link itself reached
# through a linked directory, would be the next apply's declaration.
printf '{"machine": "e2e", "generation": 10, "resources": [{"id": "mid", "kind": "file", "path": "/etc/mesh/mid.json", "content": "{}"}, {"id": "own", "kind": "file", "path": "/etc/mesh/current2.json", "content": "{}"}]}' > "$T/root/etc/mesh/gen-10.json"
ln -s gen-10.json "$T/root/etc/mesh/mid.json" && ln -s mid.json "$T/root/etc/mesh/current2.json" && ln -s root "$T/rootlink"
set +e
err=$("$BIN" apply "${F[@]/$T\/decl.json/$T/rootlink/etc/mesh/current2.json}" 2>&1 >/dev/null); rc=$?
set -e
[ "$rc" = 2 ] || fail "a file over a link on the declaration's way: exit $rc: $err"
for at in mid.json current2.json; do
  grep -qF "(--declaration $T/rootlink/etc/mesh/current2.json, through $T/root/etc/mesh/$at)" <<<"$err" || fail "$at not refused: $err"
  [ -L "$T/root/etc/mesh/$at" ] || fail "$at was written over"
done
cmp -s "$T/state/state.json" "$T/state.before" || fail "the refusal touched the record"
# Nor may a directory on the way to it be opened to other users: the host
# reads no declaration they could swap, so the next apply, the one that
# would close it again, would be refused.
printf '{"machine": "e2e", "generation": 9, "resources": [{"id": "open", "kind": "directory", "path": "/etc/mesh", "mode": "0777"}]}' > "$T/root/etc/mesh/open.json"
mode_before=$(stat -c %a "$T/root/etc/mesh")
set +e
err=$("$BIN" apply "${F[@]/$T\/decl.json/$T/root/etc/mesh/open.json}" 2>&1 >/dev/null); rc=$?
verr=$("$BIN" validate --declaration "$T/root/etc/mesh/open.json" --root "$T/root" 2>&1); vrc=$?
set -e
[ "$rc" = 2 ] || fail "a directory on the declaration's way opened: exit $rc: $err"
grep -qF "resource open, field mode: \"0777\" lets users other than root change $T/root/etc/mesh, a directory on the way to the declaration" <<<"$err" || fail "open way, words: $err"
[ "$vrc" = 2 ] && grep -q "a directory on the way to the declaration" <<<"$verr" || fail "validate of the open way: $vrc $verr"
[ "$(stat -c %a "$T/root/etc/mesh")" = "$mode_before" ] || fail "the way was opened"
cmp -s "$T/state/state.json" "$T/state.before" || fail "the refusal touched the record"
# Under `run`, the mesh re-points the link between applies: the daemon
# guards the file each apply read, not the one the link led to at its start.
printf '{"machine": "e2e", "generation": 8, "resources": []}' > "$T/root/etc/mesh/gen-8.json"
ln -sfn "$T/root/etc/mesh/gen-8.json" "$T/current.json"
"$BIN" run --declaration "$T/current.json" --root "$T/root" --state-dir "$T/run-state" --artifacts "$T/art" \
  --unit-dir "$T/units" --machine e2e --listen 127.0.0.1:0 --interval 1h 2> "$T/run.log" &
HOST=$!
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null || true; rm -rf "$T"' EXIT
for _ in $(seq 1 100); do grep -q "^apply ok: generation 8" "$T/run.log" && break; sleep 0.05; done
grep -q "^apply ok: generation 8" "$T/run.log" || fail "run: no first apply: $(tail -3 "$T/run.log")"
ln -s "$T/root/etc/mesh/gen-9.json" "$T/next.json" && mv -T "$T/next.json" "$T/current.json"
says="overlaps the declaration itself (--declaration $T/current.json, which is $T/root/etc/mesh/gen-9.json)"
for _ in $(seq 1 100); do grep -qF "$says" "$T/run.log" && break; sleep 0.05; done
# Then through a link it did not go through at the start.
printf '{"machine": "e2e", "generation": 11, "resources": [{"id": "mid", "kind": "file", "path": "/etc/mesh/mid-11.json", "content": "{}"}]}' > "$T/root/etc/mesh/gen-11.json"
ln -s gen-11.json "$T/root/etc/mesh/mid-11.json"
ln -s "$T/root/etc/mesh/mid-11.json" "$T/next.json" && mv -T "$T/next.json" "$T/current.json"
via="(--declaration $T/current.json, through $T/root/etc/mesh/mid-11.json)"
for _ in $(seq 1 100); do grep -qF "$via" "$T/run.log" && break; sleep 0.05; done
kill -TERM $HOST; wait $HOST || true
HOST=
grep -qF "$says" "$T/run.log" || fail "run, link re-pointed: $(tail -3 "$T/run.log")"
cmp -s "$T/root/etc/mesh/gen-9.json" "$T/gen-9.before" || fail "run wrote over the declaration"
grep -qF "$via" "$T/run.log" && [ -L "$T/root/etc/mesh/mid-11.json" ] || fail "run, a link on the way: $(tail -3 "$T/run.log")"
echo "e2e: all checks passed"
