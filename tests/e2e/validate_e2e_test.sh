#!/usr/bin/env bash
# `mesh-host validate` (issue 40), the built binary: a valid declaration
# exits 0 and touches nothing (no state directory, no root made, no bus); every
# refusal is named at once, exit 2; a bundle whose digest is wrong, a
# signature by another key, a readable declaration holding a credential,
# another machine's name are refused; systemd-analyze's findings on a unit
# text are warnings; --output json says the same for CI.
set -euo pipefail
BIN="$PWD/host/mesh-host"
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/validate.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
mkdir -p "$T/art" "$T/b"
echo hi > "$T/b/run"; tar -C "$T/b" -czf "$T/art/app.tar.gz" .
SHA=$(sha256sum "$T/art/app.tar.gz" | cut -d' ' -f1)
mkdir -p "$T/good"; cp "$T/art/app.tar.gz" "$T/good/"  # the bundle as declared, kept
umask 077
cat > "$T/d.json" <<JSON
{"machine": "edge-1", "generation": 7, "resources": [
  {"id": "app.conf", "kind": "file", "path": "/etc/app.conf", "content": "x"},
  {"id": "app.token", "kind": "credential", "path": "/etc/app.token", "content": "s3cr3t"},
  {"id": "app", "kind": "process", "path": "/opt/app", "source": "app.tar.gz", "sha256": "$SHA",
   "unit": "app.service", "unit_text": "[Service]\nExecStart=/opt/app/run\nBogusKey=1\n",
   "restart_on": ["app.conf"], "on_failure": "rollback"}]}
JSON
run() { set +e; OUT=$("$BIN" validate "$@" 2>"$T/err"); RC=$?; ERR=$(cat "$T/err"); set -e; }

run --declaration "$T/d.json" --artifacts "$T/art"
check "valid: exit 0" '[ "$RC" = 0 ]'
check "valid: says what it read" 'grep -qx "$T/d.json: valid: machine edge-1, generation 7, 3 resource(s)" <<<"$OUT"'
check "the unit text is read by systemd-analyze: a warning, not a refusal" \
  'grep -q "^warning: systemd-analyze: app.service:3: Unknown key .BogusKey." <<<"$ERR"'
check "touched nothing: no default state directory or artifacts made" \
  '[ ! -e /var/lib/mesh-host/state.json ] || [ "$(stat -c %Y /var/lib/mesh-host/state.json)" -lt "$(stat -c %Y "$T/d.json")" ]'
check "never a secret in what it says" '! grep -q s3cr3t <<<"$OUT$ERR"'
# Where systemd-analyze is not installed (here: hidden in a mount namespace
# of this test's own), the declaration is still valid and validate says the
# unit texts went unchecked, and why.
if unshare -m true 2>/dev/null; then
  set +e
  OUT=$(unshare -m sh -c 'for a in /usr/bin/systemd-analyze /bin/systemd-analyze; do
                            [ -e "$a" ] && mount --bind /dev/null "$a"; done
                          exec "$0" validate --declaration "$1" --artifacts "$2"' \
        "$BIN" "$T/d.json" "$T/art" 2>&1); RC=$?
  set -e
  check "no systemd-analyze: still valid, and says the unit texts were not checked" \
    '[ "$RC" = 0 ] && grep -q "^warning: unit texts not checked: systemd-analyze is not installed (Debian: systemd)$" <<<"$OUT"'
else
  echo "SKIP (LOUD): no mount namespace here to hide systemd-analyze in"
fi

# enabled: true on a unit_text with nothing to enable: apply fails it
# (unless systemd has it enabled already, which validate cannot see).
cat > "$T/enable.json" <<JSON
{"machine": "edge-1", "generation": 7, "resources": [
  {"id": "web", "kind": "service", "unit": "web.service", "state": "running", "enabled": true,
   "unit_text": "[Service]\nExecStart=/bin/true\n"},
  {"id": "db", "kind": "service", "unit": "db.service", "state": "running", "enabled": true,
   "unit_text": "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n"}]}
JSON
run --declaration "$T/enable.json"
check "enabled with nothing to enable: a warning naming it, still valid" \
  '[ "$RC" = 0 ] && grep -q "^warning: resource web: enabled: true, but its unit_text has no \[Install\] section" <<<"$ERR" && ! grep -q "resource db:" <<<"$ERR"'

run --declaration "$T/d.json" --artifacts "$T/art" --machine edge-2
check "another machine's: exit 2, named" '[ "$RC" = 2 ] && grep -q "field machine: \"edge-1\" is not this machine (--machine edge-2)" <<<"$ERR"'
# The host's own places, as apply checks them: the default state directory,
# and the directories given.
cat > "$T/places.json" <<JSON
{"machine": "edge-1", "generation": 7, "resources": [
  {"id": "record", "kind": "file", "path": "/var/lib/mesh-host/state.json", "content": "{}"},
  {"id": "unit", "kind": "file", "path": "/srv/units/x.service", "content": "x"}]}
JSON
run --declaration "$T/places.json" --artifacts "$T/art"
check "a file on the default state directory: exit 2, named" \
  '[ "$RC" = 2 ] && grep -q "resource record, field path: \"/var/lib/mesh-host/state.json\" (/var/lib/mesh-host/state.json) overlaps the host.s state directory (--state-dir /var/lib/mesh-host)" <<<"$ERR"'
run --declaration "$T/places.json" --artifacts "$T/art" --root "$T/r" --state-dir "$T/s" --unit-dir "$T/u"
check "with the host's directories elsewhere: valid" '[ "$RC" = 0 ]'
check "a --root not there: its paths not looked at, said" \
  'grep -q "^warning: paths not looked at under --root $T/r: " <<<"$ERR"'
run --declaration "$T/places.json" --artifacts "$T/art" --state-dir /srv/units/
check "--state-dir given: its overlap named" \
  '[ "$RC" = 2 ] && grep -q "resource unit, field path: \"/srv/units/x.service\" (/srv/units/x.service) overlaps the host.s state directory (--state-dir /srv/units)" <<<"$ERR"'
# The look apply takes at each declared path under --root before it
# writes: a symlink on the way refuses the declaration, so validate does.
mkdir -p "$T/linked/root" "$T/elsewhere"; ln -s "$T/elsewhere" "$T/linked/root/etc"
run --declaration "$T/d.json" --artifacts "$T/good" --root "$T/linked/root"
check "a symlink on the way under --root: exit 2, in apply's words, nothing written" \
  '[ "$RC" = 2 ] && grep -q "^refused: resource app.conf, field path: path /etc/app.conf: /etc is a symlink; mesh-host does not follow symlinks under its root ($T/linked/root)" <<<"$ERR" && [ -z "$(ls -A "$T/elsewhere")" ]'
check "... each path on it named" 'grep -q "^refused: resource app.token, field path: " <<<"$ERR"'
# --root not given: this machine's / may not be the target's (validate run
# where the declaration is built), so what apply here would refuse is a
# warning. A directory that is a link at / (merged /usr: /bin) shows it.
LINKED=""; for d in /*; do if [ -L "$d" ] && [ -d "$d" ]; then LINKED=$d; break; fi; done
if [ -n "$LINKED" ]; then
  printf '{"machine": "edge-1", "generation": 7, "resources": [{"id": "tool", "kind": "file", "path": "%s/mesh-host-validate-never-written", "content": "x"}]}' "$LINKED" > "$T/slash.json"
  run --declaration "$T/slash.json"
  check "a link at this machine's / with --root not given: valid, and a warning in apply's words" \
    '[ "$RC" = 0 ] && grep -q "^warning: apply on this machine (--root /) would refuse resource tool, field path: path $LINKED/mesh-host-validate-never-written: $LINKED is a symlink" <<<"$ERR"'
  run --declaration "$T/slash.json" --root /
  check "... and --root / given: refused" '[ "$RC" = 2 ] && grep -q "^refused: resource tool, field path: " <<<"$ERR"'
else
  echo "SKIP (LOUD): no directory at / is a link here; the warning under a root not given is not shown"
fi

echo changed > "$T/b/run"; tar -C "$T/b" -czf "$T/art/app.tar.gz" .
run --declaration "$T/d.json" --artifacts "$T/art"
check "a bundle whose digest moved: exit 2, both digests named" '[ "$RC" = 2 ] && grep -q "resource app, field sha256: source app.tar.gz has sha256 .*, the declaration says $SHA" <<<"$ERR"'
# A bundle apply would refuse (a symlink member: it could lead out of the
# tree) is refused by validate too, in apply's words.
mkdir -p "$T/h"; echo hi > "$T/h/run"; ln -s /etc/passwd "$T/h/link"
tar -C "$T/h" -czf "$T/art/evil.tar.gz" .
EVIL=$(sha256sum "$T/art/evil.tar.gz" | cut -d' ' -f1)
sed -e "s/app.tar.gz/evil.tar.gz/" -e "s/$SHA/$EVIL/" "$T/d.json" > "$T/evil.json"
run --declaration "$T/evil.json" --artifacts "$T/art"
check "a bundle with a symlink member: exit 2, refused as apply refuses it" '[ "$RC" = 2 ] && grep -q "^refused: resource app, field source: bundle evil.tar.gz refused: " <<<"$ERR"'
run --declaration "$T/d.json" --artifacts "$T/none"
check "an --artifacts given that is not there: exit 2, as apply would" '[ "$RC" = 2 ] && grep -q "^refused: bundles cannot be read: --artifacts $T/none" <<<"$ERR"'

chmod 0644 "$T/d.json"
run --declaration "$T/d.json" --artifacts "$T/none"
check "readable by others with a credential: exit 2, the chmod named" '[ "$RC" = 2 ] && grep -q "(mode 0644): chmod 0600 $T/d.json" <<<"$ERR"'
chmod 0600 "$T/d.json"

cat > "$T/bad.json" <<'JSON'
{"machine": "edge-1", "generation": 1, "resources": [
  {"id": "a", "kind": "file", "path": "etc/a", "content": "x"},
  {"id": "b", "kind": "file", "path": "/etc/b", "contnet": "x"},
  {"id": "c", "kind": "service", "unit": "c", "state": "running"}]}
JSON
run --declaration "$T/bad.json"
check "every refusal at once: exit 2" '[ "$RC" = 2 ] && [ "$(grep -c "^refused: " <<<"$ERR")" = 4 ]'
check "... a relative path named" 'grep -q "^refused: resource a, field path: " <<<"$ERR"'
check "... a near miss said" 'grep -q "field contnet: unknown field for kind file (did you mean \"content\"?)" <<<"$ERR"'
check "... and, of the same resource, what it lacks" 'grep -q "^refused: resource b, field content: exactly one of" <<<"$ERR"'
check "... a unit name without suffix named" 'grep -q "^refused: resource c, field unit: " <<<"$ERR"'
# What needs the machine (its name, the host's places, the bundles) is
# named beside the resources' own refusals, not once they are mended.
sed -e 's/"generation": 1, "resources": \[/"generation": 1, "resources": [\n  {"id": "r", "kind": "file", "path": "\/var\/lib\/mesh-host\/x", "content": "x"},/' \
  "$T/bad.json" > "$T/bad-here.json"
run --declaration "$T/bad-here.json" --machine edge-2 --output json
check "... with this machine's checks beside them" \
  '[ "$RC" = 2 ] && python3 -c "import json, sys; d = json.loads(sys.argv[1]); r = d[\"refusals\"]
assert d[\"machine\"] == \"edge-1\" and d[\"generation\"] == 1 and d[\"problems\"] == 6, d
assert any(\"is not this machine (--machine edge-2)\" in x for x in r), r
assert any(\"resource r, field path\" in x and \"state directory\" in x for x in r), r" "$OUT"'
# Past the 50 named, the rest are counted, not dropped from the count.
python3 -c 'import json, sys
json.dump({"machine": "edge-1", "generation": 1, "resources": [
  {"id": f"f{i}", "kind": "file", "path": f"rel/{i}", "content": "x"} for i in range(60)]},
  open(sys.argv[1], "w"))' "$T/sixty.json"
run --declaration "$T/sixty.json"
check "60 refusals: 50 named, the rest counted" \
  '[ "$RC" = 2 ] && [ "$(grep -c "^refused: resource" <<<"$ERR")" = 50 ] && grep -qx "refused: ... and 10 more" <<<"$ERR" && grep -q ": refused (60 problem(s))" <<<"$OUT"'
run --declaration "$T/bad.json" --output json
check "--output json: one object, valid false, the refusals" \
  '[ "$RC" = 2 ] && python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert d[\"valid\"] is False and len(d[\"refusals\"]) == 4, d" "$OUT"'

if command -v minisign >/dev/null; then
  minisign -G -W -p "$T/k.pub" -s "$T/k.key" >/dev/null
  minisign -G -W -p "$T/o.pub" -s "$T/o.key" >/dev/null
  minisign -S -s "$T/k.key" -m "$T/d.json" -t "generation 7 by ci" >/dev/null
  run --declaration "$T/d.json" --artifacts "$T/good" --verify-key "$T/k.pub"
  check "signed by the key: valid, the signer said" '[ "$RC" = 0 ] && grep -q "signed by " <<<"$OUT"'
  run --declaration "$T/d.json" --artifacts "$T/good" --verify-key "$T/o.pub" --output json
  check "signed by another key: exit 2" '[ "$RC" = 2 ] && grep -q "another key" <<<"$OUT"'
else
  echo "FAIL - minisign is missing (tools/lib/packages.sh installs it)"; fails=$((fails+1))
fi

echo "validate: $fails failed"
[ "$fails" = 0 ]
