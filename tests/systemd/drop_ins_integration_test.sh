#!/usr/bin/env bash
# drop_ins (issue 16) against a real systemd: what the daemon runs with is
# what the declared drop-ins say. Written to UNIT.d/, one daemon-reload,
# the unit restarted onto it (two looks); unchanged after; a hand edit put
# back; a dropped drop-in deleted and the unit restarted without it.
. "$(dirname "$0")/box_suite.sh" drop-ins
mkdir -p "$T/root"
apply() {  # apply GENERATION GREETING ("-": no drop-in)
  python3 - "$T/decl.json" "$1" "$2" "$T" <<'PY'
import json, sys
path, gen, greeting, t = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
svc = {"id": "web", "kind": "service", "unit": "mh-web.service", "state": "running",
       "unit_text": f"[Service]\nExecStart=/bin/sh -c 'echo \"$GREETING\" > {t}/said; exec sleep 1000'\n"}
if greeting != "-":
    svc["drop_ins"] = {"10-greeting.conf": f"[Service]\nEnvironment=GREETING={greeting}\n"}
json.dump({"machine": "box", "generation": gen, "resources": [svc]}, open(path, "w"))
PY
  box_apply
}
prop() { busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/mh_2dweb_2eservice \
           org.freedesktop.systemd1.Unit "$1" | cut -d' ' -f2- | tr -d '"'; }
said() { for _ in $(seq 1 50); do [ -s "$T/said" ] && break; sleep 0.02; done; cat "$T/said" 2>/dev/null; }
DROPIN=$UNITS/mh-web.service.d/10-greeting.conf

apply 1 hello
check "created with its drop-in" \
  '[ $RC = 0 ] && grep -q "^created web (service): wrote unit file mh-web.service, wrote drop-in mh-web.service.d/10-greeting.conf" <<<"$OUT"'
check "the daemon runs with it" '[ "$(said)" = hello ] && [ "$(prop ActiveState)" = active ]'
check "systemd loaded it (DropInPaths)" 'prop DropInPaths | grep -q "10-greeting.conf"'
inv=$(prop InvocationID)

apply 1 hello
check "unchanged on the next apply, not restarted" \
  '[ $RC = 0 ] && grep -q "^unchanged web (service)" <<<"$OUT" && [ "$(prop InvocationID)" = "$inv" ]'

rm -f "$T/said"
apply 2 bonjour
check "a changed drop-in restarts the unit onto it" \
  '[ $RC = 0 ] && grep -q "^updated web (service): wrote drop-in mh-web.service.d/10-greeting.conf, running as mh-web.service" <<<"$OUT" && [ "$(said)" = bonjour ] && [ "$(prop InvocationID)" != "$inv" ]'
check "no daemon-reload owed after it" '[ "$(prop NeedDaemonReload)" = false ]'

printf '[Service]\nEnvironment=GREETING=pwned\n' > "$DROPIN"
rm -f "$T/said"
apply 2 bonjour
check "a hand edit is put back, said, and the daemon restarted onto the declared one" \
  '[ $RC = 0 ] && grep -q "drifted: drop-in 10-greeting.conf changed on the machine, put back" <<<"$OUT" && [ "$(said)" = bonjour ] && grep -q GREETING=bonjour "$DROPIN"'

rm -f "$T/said"
apply 3 -
check "a dropped drop-in is deleted and the unit restarted without it" \
  '[ $RC = 0 ] && grep -q "deleted drop-in mh-web.service.d/10-greeting.conf" <<<"$OUT" && [ ! -e "$DROPIN" ] && [ -z "$(said)" ] && [ "$(prop ActiveState)" = active ]'
finish
