#!/usr/bin/env bash
# A failed flush is a failed write, never ignored (issue 19): strace makes
# the syncfs that makes an unpacked tree durable fail with EIO; the archive
# must fail naming it, the old tree (none here) must stay, and the next
# apply, with the disk back, must converge.
set -euo pipefail
BIN=$PWD/host/mesh-host
command -v strace >/dev/null || { echo "strace is missing (tools/lib/packages.sh installs it)" >&2; exit 1; }
T=$(mktemp -d /tmp/mesh-host-fsync.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/root" "$T/art/src"
printf 'x\n' > "$T/art/src/f"
tar czf "$T/art/b.tar.gz" -C "$T/art/src" f
sha=$(sha256sum "$T/art/b.tar.gz" | cut -d' ' -f1)
printf '{"machine":"m","generation":1,"resources":[{"id":"b","kind":"archive","path":"/opt/b","source":"b.tar.gz","sha256":"%s"}]}' "$sha" > "$T/d.json"
F=(--declaration "$T/d.json" --root "$T/root" --state-dir "$T/state" --artifacts "$T/art" --unit-dir "$T/units" --machine m)
fail() { echo "FAIL: $*"; exit 1; }
# The apply with its N-th syncfs failed (EIO) by strace: sets $out, exit 1.
apply_failing_syncfs() {
  local rc=0
  out=$(strace -f -qq -o /dev/null -e trace=syncfs -e inject=syncfs:error=EIO:when="$1" "$BIN" apply "${F[@]}" 2>&1) || rc=$?
  echo "$out" | sed 's/^/    /'
  [ "$rc" = 1 ] || fail "exit $rc, not 1"
}
generation_is() {
  python3 -c 'import json,sys; sys.exit(json.loads(open(sys.argv[1]).readline())["generation"] != int(sys.argv[2]))' "$T/state/state.json" "$1"
}
# The unpack makes its tree durable with one syncfs, the apply's only one.
apply_failing_syncfs 1
grep -q "^failed b (archive): .*syncfs /opt/b: Input/output error" <<<"$out" || fail "the failed syncfs is not named"
[ ! -e "$T/root/opt/b" ] || fail "a tree whose syncfs failed was swapped in"
echo "ok   - a failed syncfs of the tree fails the archive, nothing swapped in"
out=$("$BIN" apply "${F[@]}" 2>&1) || fail "the next apply: $out"
grep -q "^created b (archive)" <<<"$out" || fail "the next apply did not converge: $out"
echo "ok   - the next apply converges"

# Files: the apply's files are staged, then made durable by one syncfs
# before any is put in place. That syncfs failing fails them all, and none
# is put in place.
printf '{"machine":"m","generation":2,"resources":[{"id":"f","kind":"file","path":"/etc/f","content":"f\\n"},{"id":"g","kind":"file","path":"/etc/g","content":"g\\n"},{"id":"b","kind":"archive","path":"/opt/b","source":"b.tar.gz","sha256":"%s"}]}' "$sha" > "$T/d.json"
apply_failing_syncfs 1
grep -q "^failed f (file): syncfs .*: Input/output error" <<<"$out" || fail "the failed syncfs is not named for f"
grep -q "^failed g (file): syncfs .*: Input/output error" <<<"$out" || fail "the failed syncfs is not named for g"
[ ! -e "$T/root/etc/f" ] && [ ! -e "$T/root/etc/g" ] || fail "a file whose syncfs failed was put in place"
[ -z "$(ls -A "$T/root/etc")" ] || fail "temporaries left: $(ls -A "$T/root/etc")"
echo "ok   - a failed syncfs of the staged files fails each, none put in place, no temporary left"
out=$("$BIN" apply "${F[@]}" 2>&1) || fail "the next apply: $out"
grep -q "^created f (file)" <<<"$out" && grep -q "^created g (file)" <<<"$out" || fail "the next apply did not converge: $out"
echo "ok   - the next apply converges"

# The owners and modes given at placement are made durable before the
# record claims them: a failed syncfs there (the apply's second) keeps the
# record from claiming the writes.
printf '{"machine":"m","generation":3,"resources":[{"id":"f","kind":"file","path":"/etc/f","content":"f2\\n","mode":"0640"},{"id":"g","kind":"file","path":"/etc/g","content":"g\\n"},{"id":"b","kind":"archive","path":"/opt/b","source":"b.tar.gz","sha256":"%s"}]}' "$sha" > "$T/d.json"
apply_failing_syncfs 2
grep -q "syncfs .*: Input/output error" <<<"$out" || fail "the failed syncfs is not named"
generation_is 2 || fail "the record claims generation 3 though its writes were not made durable"
out=$("$BIN" apply "${F[@]}" 2>&1) || fail "the next apply: $out"
generation_is 3 || fail "the next apply did not converge: $out"
echo "ok   - a failed syncfs after placement keeps the record from claiming it"
