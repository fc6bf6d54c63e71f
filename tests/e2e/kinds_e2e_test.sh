#!/usr/bin/env bash
# directory and symlink (issue 16) through the real binary on a real file
# system: created; unchanged on the next apply (proven from the record);
# drift put back and said; pruned only when the host made them and they
# are as it left them (a directory only when empty); nothing in the way
# replaced; the bad declarations refused with nothing written.
set -euo pipefail
BIN=$PWD/host/mesh-host
T=$(mktemp -d /tmp/mesh-host-kinds.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
F=(--declaration "$T/d.json" --root "$T/root" --state-dir "$T/state" --unit-dir "$T/units" --artifacts "$T/art" --machine m)
mkdir -p "$T/root"
decl() { printf '{"machine":"m","generation":%s,"resources":[%s]}' "$1" "$2" > "$T/d.json"; }
apply() { set +e; OUT=$("$BIN" apply "${F[@]}" 2>&1); RC=$?; set -e; }
DIRS='{"id":"data","kind":"directory","path":"/srv/data","mode":"0750"},{"id":"spool","kind":"directory","path":"/srv/spool"}'
LINK='{"id":"current","kind":"symlink","path":"/opt/app/current","target":"/opt/app/releases/42"}'

decl 1 "$DIRS,$LINK"; apply
[ $RC = 0 ] || fail "first apply: $OUT"
grep -q "^created data (directory): made directory, mode 0750, owner root:root" <<<"$OUT" || fail "$OUT"
grep -q "^created current (symlink): linked to /opt/app/releases/42" <<<"$OUT" || fail "$OUT"
[ "$(stat -c %a "$T/root/srv/data")" = 750 ] && [ "$(stat -c %a "$T/root/srv/spool")" = 755 ] || fail "modes"
[ "$(readlink "$T/root/opt/app/current")" = /opt/app/releases/42 ] || fail "target"
echo "ok   - created: directories with their modes, a symlink with its target (dangling is fine)"

touch "$T/root/srv/data/inside"
apply
[ $RC = 0 ] && [ "$(grep -c '^unchanged' <<<"$OUT")" = 3 ] || fail "second apply: $OUT"
echo "ok   - unchanged on the next apply (a file added inside is not a change)"

chmod 0777 "$T/root/srv/data"; ln -sfn /tmp/elsewhere "$T/root/opt/app/current"
apply
grep -q "^updated data (directory): drifted: mode changed on the machine, put back" <<<"$OUT" || fail "$OUT"
grep -q "^updated current (symlink): drifted: target changed on the machine, put back" <<<"$OUT" || fail "$OUT"
[ "$(stat -c %a "$T/root/srv/data")" = 750 ] && [ "$(readlink "$T/root/opt/app/current")" = /opt/app/releases/42 ] ||
  fail "not put back"
echo "ok   - drift put back and said"

decl 2 ""; apply
[ $RC = 0 ] || fail "prune: $OUT"
[ -d "$T/root/srv/data" ] && [ -e "$T/root/srv/data/inside" ] || fail "a directory with something inside was deleted"
grep -q "left /srv/data: not empty" <<<"$OUT" || fail "$OUT"
[ ! -e "$T/root/srv/spool" ] && [ ! -L "$T/root/opt/app/current" ] || fail "not pruned: $OUT"
echo "ok   - pruned: the empty directory and the symlink; the directory with a file inside left"

printf 'x' > "$T/root/srv/file"
decl 3 '{"id":"d","kind":"directory","path":"/srv/file"}'; apply
[ $RC = 1 ] && grep -q "is not a directory (not replaced" <<<"$OUT" && [ "$(cat "$T/root/srv/file")" = x ] ||
  fail "a file in the way: $OUT"
echo "ok   - a file in a directory's way is not replaced"

before=$(cd "$T" && find root state -printf '%p %T@\n' | sort)
for bad in '{"id":"l","kind":"symlink","path":"/a"}' '{"id":"d","kind":"directory","path":"/a","content":"x"}'; do
  decl 4 "$bad"; apply
  [ $RC = 2 ] || fail "refused: $OUT"
done
[ "$before" = "$(cd "$T" && find root state -printf '%p %T@\n' | sort)" ] || fail "a refused declaration wrote"
echo "ok   - a symlink without target and a directory with content are refused, nothing written"
