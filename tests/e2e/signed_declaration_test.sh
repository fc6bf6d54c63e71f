#!/usr/bin/env bash
# --verify-key (issue 17): declarations signed by Debian's minisign apply;
# every signature that does not let a declaration apply refuses it whole
# (exit 2, nothing written) and says which problem it was; the daemon
# re-verifies on every read; a bad key refuses to start.
set -euo pipefail
BIN=$PWD/host/mesh-host
command -v minisign >/dev/null || { echo "minisign is missing (tools/lib/packages.sh installs it)" >&2; exit 1; }
T=$(mktemp -d /tmp/mesh-host-signed.XXXXXX)
HOST=
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
minisign -G -W -p "$T/k.pub" -s "$T/k.key" >/dev/null
minisign -G -W -p "$T/other.pub" -s "$T/other.key" >/dev/null
mkdir -p "$T/root"
decl() {  # decl GENERATION CONTENT
  printf '{"machine":"m","generation":%s,"resources":[{"id":"f","kind":"file","path":"/etc/f","content":"%s"}]}' "$1" "$2" > "$T/d.json"
}
sign() { minisign -S -s "$T/${KEY:-k}.key" -m "$T/d.json" "$@" >/dev/null; }
F=(--declaration "$T/d.json" --root "$T/root" --state-dir "$T/state" --unit-dir "$T/units" --machine m --verify-key "$T/k.pub")

# refused DESCRIPTION EXPECTED-WORDS: exit 2, the words, and nothing written.
refused() {
  local before; before=$(cd "$T" && find root state -printf '%p %s %T@\n' 2>/dev/null | sort)
  set +e; out=$("$BIN" apply "${F[@]}" 2>&1); rc=$?; set -e
  [ "$rc" = 2 ] || fail "$1: exit $rc, not 2: $out"
  grep -q -- "$2" <<<"$out" || fail "$1: does not say \"$2\": $out"
  [ "$before" = "$(cd "$T" && find root state -printf '%p %s %T@\n' 2>/dev/null | sort)" ] ||
    fail "$1: something was written"
  echo "ok   - $1: refused, \"$2\", nothing written"
}

decl 1 one; sign
out=$("$BIN" apply "${F[@]}" 2>&1) || fail "signed (prehashed): $out"
grep -q "^created f (file)" <<<"$out" || fail "signed apply did not create: $out"
[ "$(cat "$T/root/etc/f")" = one ] || fail "content"
echo "ok   - a prehashed signature (minisign's default) applies"

# The key decides what runs as root: one others can change is no key.
chmod 0666 "$T/k.pub"
refused "a key others can write" "writable by users other than its owner (mode 0666)"
chmod 0644 "$T/k.pub"
if chown nobody "$T/k.pub" 2>/dev/null; then  # not where the sandbox maps no other uid
  refused "a key another user owns" "owned by uid $(id -u nobody), neither root nor this process's user"
  chown 0 "$T/k.pub"
else
  echo "SKIP (LOUD) - a key another user owns: no other uid to give it here"
fi
chmod 0777 "$T"
refused "a key in a directory others can write" "in $T, which users other than root or this process's user can change"
chmod 0700 "$T"
# Through a link, the directory that holds the key itself is the one that counts.
mkdir -m 0777 "$T/open"; mv "$T/k.pub" "$T/open/k.pub"; ln -s open/k.pub "$T/k.pub"
refused "a key linked from a directory others can write" "in $T/open, which users other than root"
rm "$T/k.pub"; mv "$T/open/k.pub" "$T/k.pub"; rmdir "$T/open"

decl 2 two; sign -l
out=$("$BIN" apply "${F[@]}" 2>&1) || fail "signed (legacy): $out"
grep -q "^updated f (file)" <<<"$out" || fail "legacy-signed apply did not update: $out"
echo "ok   - a legacy signature (minisign -l) applies"

cp "$T/d.json.minisig" "$T/gen2.minisig"
decl 3 tree; sign; cp "$T/d.json" "$T/gen3.json"
sed -i 's/tree/thre/' "$T/d.json"
refused "one byte changed after signing" "does not verify: the declaration is not the one that was signed"

cp "$T/gen3.json" "$T/d.json"; rm "$T/d.json.minisig"
refused "no .minisig" "d.json.minisig: missing"

KEY=other sign
refused "signed by another key" "signed by another key"

cp "$T/gen2.minisig" "$T/d.json.minisig"
refused "generation 2's signature on generation 3" "does not verify"

sign -t "generation 3"
sed -i 's/^trusted comment: generation 3$/trusted comment: generation 4/' "$T/d.json.minisig"
refused "trusted comment altered" "trusted comment does not verify"

# Issue 39 (8): another declaration, validly signed, at the generation
# already applied: two of them could be alternated at will.
decl 2 swapped; sign
refused "another signed declaration at an applied generation" "field generation: 2 was applied from another declaration"
cp "$T/gen3.json" "$T/d.json"

printf 'untrusted comment: x\nnot a signature\n' > "$T/d.json.minisig"
refused "a .minisig that is not a signature" "not a minisign signature"

out=$("$BIN" plan "${F[@]}" 2>&1) && fail "plan took the bad signature: $out"
grep -q "not a minisign signature" <<<"$out" || fail "plan does not say why: $out"
echo "ok   - plan verifies too"

# A bad key refuses to start: apply, plan and run, exit 2, naming the flag.
printf 'untrusted comment: x\nAAAA\n' > "$T/bad.pub"
for key in "$T/bad.pub" "$T/absent.pub" "$T"; do
  for verb in apply run; do
    listen=(); [ "$verb" = run ] && listen=(--listen 127.0.0.1:0)
    set +e; out=$(timeout 10 "$BIN" $verb "${F[@]}" "${listen[@]}" --verify-key "$key" 2>&1); rc=$?; set -e
    [ "$rc" = 2 ] || fail "$verb with key $key: exit $rc: $out"
    grep -q -- "--verify-key $key: " <<<"$out" || fail "$verb with key $key: $out"
  done
done
echo "ok   - a malformed, missing or non-file key refuses apply and run (exit 2)"

# The daemon re-verifies on every read: the signature replaced under an
# unchanged declaration refuses it, with the refusal on /status.
sign
# The log exists before the daemon starts: the redirection below happens in
# the child, and the loop must not read a file it has not opened yet.
: > "$T/log"
"$BIN" run "${F[@]}" --listen 127.0.0.1:0 --interval 1h 2> "$T/log" &
HOST=$!
url=
# Bounded (30 s), but generous: on CI's two cores the sanitizers compile
# beside this test, and the first apply can take seconds.
for _ in $(seq 1 600); do
  url=$(sed -n 's/.*listening on \([0-9.:]*\).*/http:\/\/\1/p' "$T/log" | head -1)
  [ -n "$url" ] && grep -q "^apply ok" "$T/log" && break; sleep 0.05
done
[ -n "$url" ] || fail "the daemon did not start: $(cat "$T/log")"
# Whose signature the applied generation carries, on /status and the page.
curl -sf "$url/status" | python3 -c '
import json, sys
s = json.load(sys.stdin)["signature"]
sys.exit(0 if s and len(s["key_id"]) == 16 and s["trusted_comment"] else 1)' ||
  fail "/status does not name the signer: $(curl -s "$url/status")"
curl -sf "$url/" | grep -q "signed by</dt><dd>key <code>[0-9A-F]\{16\}</code>" ||
  fail "the page does not name the signer"
table=$("$BIN" status --url "$url" 2>&1) || true
grep -q "^signed by key [0-9A-F]\{16\}$" <<<"$table" && grep -q "^    trusted comment: " <<<"$table" ||
  fail "mesh-host status does not name the signer and its trusted comment: $table"
echo "ok   - /status, the page and mesh-host status name the signer and the trusted comment"
KEY=other sign
seen=0
for _ in $(seq 1 100); do
  if curl -sf "$url/status" | python3 -c '
import json, sys
s = json.load(sys.stdin)
sys.exit(0 if s["error"] and "signed by another key" in s["error"] else 1)'; then seen=1; break; fi
  sleep 0.05
done
[ "$seen" = 1 ] || fail "/status does not show the foreign signature: $(curl -s "$url/status")"
# /status and /metrics are published one after the other: wait for both.
seen=0
for _ in $(seq 1 100); do
  curl -sf "$url/metrics" | grep -q '^mesh_host_reconciles_total{result="refused"} [1-9]' && { seen=1; break; }
  sleep 0.05
done
[ "$seen" = 1 ] || fail "no refused reconcile in /metrics"
[ "$(cat "$T/root/etc/f")" = tree ] || fail "the applied file changed"
echo "ok   - run: a .minisig replaced under the declaration is caught (inotify), /status and /metrics say refused"
kill -TERM $HOST; wait $HOST || true; HOST=
