#!/usr/bin/env bash
# SPEC "Reconcile" 8 against a real systemd: an operator's mask wins. The box
# keeps its own /etc/systemd/system (sdbox.sh), so `systemctl mask` inside it
# links there, never on the machine. A unit masked by systemctl (loaded
# masked) and one masked by a link to /dev/null at its unit file's place
# (not yet loaded) get no unit file, no start, restart or reload; the
# resource fails with `masked`; unmasked, the host manages it again, and
# a restart its restart_on asked while it was masked is still owed, as is
# one its template's change asked of a masked instance.
. "$(dirname "$0")/box_suite.sh" masked
mkdir -p "$T/root"
apply() {  # apply GENERATION VERSION: the declaration of two services, then apply
  python3 - "$T/decl.json" "$1" "$2" <<'PY'
import json, sys
path, gen, v = sys.argv[1], int(sys.argv[2]), sys.argv[3]
svc = lambda n: {"id": n, "kind": "service", "unit": f"mh-{n}.service", "state": "running",
                 "unit_text": f"[Service]\nExecStart=/bin/sleep 1000{v}\n"}
conf = {"id": "conf", "kind": "file", "path": "/etc/job.conf", "content": f"v{v}\n"}
job = {"id": "job", "kind": "service", "unit": "mh-job.service", "state": "running",
       "unit_text": "[Service]\nExecStart=/bin/sleep 2000\n", "restart_on": ["conf"]}
json.dump({"machine": "box", "generation": gen, "resources": [svc("web"), svc("cron"), conf, job]},
          open(path, "w"))
PY
  box_apply
}
prop() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/mh_2d$1_2eservice" \
           org.freedesktop.systemd1.Unit "$2" | cut -d' ' -f2- | tr -d '"'; }
invocation() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/mh_2d$1_2eservice" \
                 org.freedesktop.systemd1.Unit InvocationID | cut -d' ' -f3-; }

apply 1 0
check "both start" '[ $RC = 0 ] && [ "$(prop web ActiveState)" = active ] && [ "$(prop cron ActiveState)" = active ]'
web_inv=$(invocation web); job_inv=$(invocation job)

# web: masked the operator's way, inside the box. cron: a link to /dev/null
# at its unit file's place, not yet loaded by systemd.
inside systemctl mask mh-web.service mh-job.service >/dev/null 2>&1
ln -sf /dev/null "$UNITS/mh-cron.service"
check "the mask is in the box's own /etc/systemd/system, not the machine's" \
  '[ -L "$SDBOX_DIR/config/mh-web.service" ] && [ ! -e /etc/systemd/system/mh-web.service ]'
check "systemd reports web masked" '[ "$(prop web LoadState)" = masked ]'

apply 2 1
check "the apply fails, exit 1" '[ $RC = 1 ]'
check "web fails with masked" 'grep -q "^failed web (service): masked: mh-web.service is masked" <<<"$OUT"'
check "cron fails with masked" 'grep -q "^failed cron (service): masked: mh-cron.service is masked" <<<"$OUT"'
check "no unit file written over either" \
  'grep -q "sleep 10000$" "$UNITS/mh-web.service" && [ "$(readlink "$UNITS/mh-cron.service")" = /dev/null ]'
check "web not restarted (same InvocationID), still running" \
  '[ "$(invocation web)" = "$web_inv" ] && [ "$(prop web ActiveState)" = active ]'
check "job's restart_on file written, job masked: failed, not restarted" \
  'grep -q "^updated conf (file)" <<<"$OUT" && grep -q "^failed job (service): masked" <<<"$OUT" && [ "$(invocation job)" = "$job_inv" ]'

# web's mask's daemon-reload loaded cron's link as well: systemd holds cron
# masked until it reloads without the link, as `systemctl unmask` would.
inside systemctl unmask mh-web.service mh-job.service >/dev/null 2>&1
rm "$UNITS/mh-cron.service"
inside systemctl daemon-reload
apply 2 1
check "unmasked: the apply succeeds" '[ $RC = 0 ]'
check "web's unit file is written and web restarted onto it" \
  'grep -q "sleep 10001$" "$UNITS/mh-web.service" && [ "$(invocation web)" != "$web_inv" ] && [ "$(prop web ActiveState)" = active ]'
check "cron's unit file is written and cron runs" \
  'grep -q "sleep 10001$" "$UNITS/mh-cron.service" && [ "$(prop cron ActiveState)" = active ]'
check "job's restart, owed while it was masked, is done now" \
  'grep -q "^restarted job (service): restart_on conf changed" <<<"$OUT" && [ "$(invocation job)" != "$job_inv" ] && [ "$(prop job ActiveState)" = active ]'

# A template declared as a file (the box's unit directory under --root
# $SDBOX_DIR), changed while its instance was masked. systemd gives a
# masked unit its mask as FragmentPath, at the instance's own name, which
# read as a unit file of its own: the template was then no part of its
# definition, nothing was owed, and once unmasked it ran the old template,
# `unchanged`, exit 0.
tapply() {  # tapply GENERATION VERSION: the template and its instance, applied
  printf '{"machine":"box","generation":%s,"resources":[{"id":"tpl","kind":"file","path":"/units/mh-tpl@.service","content":"[Service]\\nExecStart=/bin/sleep %s\\n"},{"id":"inst","kind":"service","unit":"mh-tpl@a.service","state":"running"}]}' "$1" "$2" > "$T/tdecl.json"
  box_apply "$SDBOX_DIR" "$T/tstate" "$T/tdecl.json"
}
inst() { busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/mh_2dtpl_40a_2eservice \
           org.freedesktop.systemd1.Unit "$1" | cut -d' ' -f2- | tr -d '"'; }
tapply 1 3001
check "template: the instance starts" '[ $RC = 0 ] && [ "$(inst ActiveState)" = active ]'
tpl_inv=$(inst InvocationID)
inside systemctl mask mh-tpl@a.service >/dev/null 2>&1
tapply 2 3002
check "template changed under the masked instance: it fails masked, not restarted" \
  '[ $RC = 1 ] && grep -q "^failed inst (service): masked" <<<"$OUT" && [ "$(inst InvocationID)" = "$tpl_inv" ]'
inside systemctl unmask mh-tpl@a.service >/dev/null 2>&1
tapply 2 3002
check "unmasked: the instance is restarted onto the template it missed" \
  '[ $RC = 0 ] && grep -q "^restarted inst (service): unit definition /units/mh-tpl@.service changed (pending since generation 2)" <<<"$OUT" && [ "$(inst InvocationID)" != "$tpl_inv" ] && inside systemctl show -p ExecStart mh-tpl@a.service | grep -q "sleep 3002"'

finish
