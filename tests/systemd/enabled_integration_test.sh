#!/usr/bin/env bash
# `enabled` (issue 16) against a real systemd: the [Install] links are made
# and removed through systemd itself (EnableUnitFiles / DisableUnitFiles),
# inside the box's own /etc/systemd/system, judged by systemd's own
# UnitFileState; unchanged on the next apply (proven from the record too);
# an operator's `systemctl disable` is put back and said; a unit without an
# [Install] section cannot be enabled and says so; enabling never restarts.
. "$(dirname "$0")/box_suite.sh" enabled
mkdir -p "$T/root"
apply() {  # apply GENERATION ENABLED [INSTALL]: the declaration, then apply
  python3 - "$T/decl.json" "$1" "$2" "${3:-yes}" <<'PY'
import json, sys
path, gen, enabled, install = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "yes"
text = "[Service]\nExecStart=/bin/sleep 1000\n" + ("[Install]\nWantedBy=ci.target\n" if install else "")
svc = {"id": "web", "kind": "service", "unit": "mh-web.service", "state": "running", "unit_text": text}
if enabled != "absent":
    svc["enabled"] = enabled == "true"
json.dump({"machine": "box", "generation": gen, "resources": [svc]}, open(path, "w"))
PY
  box_apply
}
prop() { busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/mh_2dweb_2eservice \
           org.freedesktop.systemd1.Unit "$1" | cut -d' ' -f2- | tr -d '"'; }
link=$SDBOX_DIR/config/ci.target.wants/mh-web.service

apply 1 true
check "created, enabled through systemd" \
  '[ $RC = 0 ] && grep -q "^created web (service): .*enabled mh-web.service (it starts at boot)" <<<"$OUT"'
check "systemd says enabled; the link is in the box's /etc/systemd/system" \
  '[ "$(prop UnitFileState)" = enabled ] && [ -L "$link" ] && [ ! -e /etc/systemd/system/ci.target.wants/mh-web.service ]'
check "and it runs" '[ "$(prop ActiveState)" = active ]'
inv=$(prop InvocationID)

apply 1 true
check "unchanged on the next apply" '[ $RC = 0 ] && grep -q "^unchanged web (service)" <<<"$OUT"'

inside systemctl disable mh-web.service >/dev/null 2>&1
check "the operator disabled it" '[ "$(prop UnitFileState)" = disabled ] && [ ! -e "$link" ]'
apply 1 true
check "the drift is put back and said" \
  '[ $RC = 0 ] && grep -q "^updated web (service): .*drifted: mh-web.service was disabled on the machine, put back; enabled mh-web.service" <<<"$OUT"'
check "enabled again" '[ "$(prop UnitFileState)" = enabled ] && [ -L "$link" ]'
check "never restarted for it" '[ "$(prop InvocationID)" = "$inv" ]'

apply 2 false
check "enabled: false disables it" \
  '[ $RC = 0 ] && grep -q "disabled mh-web.service (it no longer starts at boot)" <<<"$OUT" && [ "$(prop UnitFileState)" = disabled ] && [ ! -e "$link" ]'

apply 3 absent
check "enabled absent: left as it is" \
  '[ $RC = 0 ] && ! grep -q "abled mh-web" <<<"$OUT" && [ "$(prop UnitFileState)" = disabled ]'

apply 4 true no
check "a unit without [Install] cannot be enabled, and says so" \
  '[ $RC = 1 ] && grep -q "^failed web (service): cannot enable mh-web.service: its unit_text has no \[Install\] section with WantedBy=" <<<"$OUT"'
"$BIN" plan --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" \
  --artifacts "$T/art" --unit-dir "$UNITS" --machine box > "$T/plan.out" 2>&1 && PRC=0 || PRC=$?
check "... and its plan says so too" \
  '[ $PRC = 1 ] && grep -q "^failed web (service): cannot enable mh-web.service: its unit_text has no \[Install\] section" "$T/plan.out"'
finish
