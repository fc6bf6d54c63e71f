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
# The unpack makes its tree durable with one syncfs, the apply's only one.
set +e
out=$(strace -f -qq -o /dev/null -e trace=syncfs -e inject=syncfs:error=EIO:when=1 "$BIN" apply "${F[@]}" 2>&1)
rc=$?
set -e
echo "$out" | sed 's/^/    /'
[ "$rc" = 1 ] || fail "exit $rc, not 1"
grep -q "^failed b (archive): .*syncfs /opt/b: Input/output error" <<<"$out" || fail "the failed syncfs is not named"
[ ! -e "$T/root/opt/b" ] || fail "a tree whose syncfs failed was swapped in"
echo "ok   - a failed syncfs of the tree fails the archive, nothing swapped in"
out=$("$BIN" apply "${F[@]}" 2>&1) || fail "the next apply: $out"
grep -q "^created b (archive)" <<<"$out" || fail "the next apply did not converge: $out"
echo "ok   - the next apply converges"
