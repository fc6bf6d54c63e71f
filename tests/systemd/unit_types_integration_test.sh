#!/usr/bin/env bash
# Beyond plain services (issue 16), against a real systemd: a timer and a
# path unit declared running are active (waiting) and accepted by the two
# looks; a socket declared running listens; two instances of an operator's
# template run side by side; each is unchanged on the next apply. What
# systemd cannot do is refused before anything is touched: restart_on on a
# socket (systemd refuses to restart it while its service runs) and
# reload_on on anything but a service.
. "$(dirname "$0")/box_suite.sh" unit-types
mkdir -p "$T/root"
# An operator's template, already on the machine.
printf '[Service]\nExecStart=/bin/sleep 100%%i\n' > "$UNITS/mh-tpl@.service"
# A socket's path must fit sun_path (108 bytes): not under $T.
SOCK=/tmp/mh-echo.$$.sock
write() {  # write GENERATION [EXTRA-JSON]: the declaration
  python3 - "$T/decl.json" "$1" "$T" "${2:-}" "$SOCK" <<'PY'
import json, sys
path, gen, t, extra, sock = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def svc(i, unit, state, text=None, **more):
    r = {"id": i, "kind": "service", "unit": unit, "state": state}
    if text is not None:
        r["unit_text"] = text
    r.update(more)
    return r
res = [
    {"id": "conf", "kind": "file", "path": "/etc/tick.conf", "content": "1\n"},
    svc("tick-job", "mh-tick.service", "stopped", "[Service]\nType=oneshot\nExecStart=/bin/true\n"),
    svc("tick", "mh-tick.timer", "running", "[Timer]\nOnActiveSec=1h\n", restart_on=["conf"]),
    svc("watch-job", "mh-watch.service", "stopped", "[Service]\nType=oneshot\nExecStart=/bin/true\n"),
    svc("watch", "mh-watch.path", "running", f"[Path]\nPathExists={t}/never-there\n"),
    svc("echo-job", "mh-echo.service", "stopped", "[Service]\nExecStart=/bin/sleep 1000\n"),
    svc("echo", "mh-echo.socket", "running", f"[Socket]\nListenStream={sock}\nRemoveOnStop=yes\n"),
    svc("tpl-a", "mh-tpl@1.service", "running"),
    svc("tpl-b", "mh-tpl@2.service", "running"),
]
if extra:
    res.append(json.loads(extra))
json.dump({"machine": "box", "generation": gen, "resources": res}, open(path, "w"))
PY
}
state() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/$1" \
            org.freedesktop.systemd1.Unit "$2" | cut -d' ' -f2- | tr -d '"'; }

write 1; box_apply
check "the apply succeeds" '[ $RC = 0 ]'
check "the timer is active (waiting)" \
  '[ "$(state mh_2dtick_2etimer ActiveState)/$(state mh_2dtick_2etimer SubState)" = active/waiting ]'
check "the path unit is active (waiting)" \
  '[ "$(state mh_2dwatch_2epath ActiveState)/$(state mh_2dwatch_2epath SubState)" = active/waiting ]'
check "the socket listens" \
  '[ "$(state mh_2decho_2esocket SubState)" = listening ] && nsenter -t "$SDBOX_PID" -m test -S "$SOCK"'
check "both instances of the template run" \
  '[ "$(state mh_2dtpl_401_2eservice ActiveState)" = active ] && [ "$(state mh_2dtpl_402_2eservice ActiveState)" = active ]'
check "each said so" \
  'grep -q "^created tick (service): .*running as mh-tick.timer" <<<"$OUT" && grep -q "^started tpl-b (service): .*mh-tpl@2.service" <<<"$OUT"'

write 1; box_apply
check "unchanged on the next apply, all of them" \
  '[ $RC = 0 ] && [ "$(grep -c "^unchanged" <<<"$OUT")" = 9 ]'

# restart_on reaches a timer: restarted, and still waiting.
python3 - "$T/decl.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["generation"] = 2
d["resources"][0]["content"] = "2\n"
json.dump(d, open(sys.argv[1], "w"))
PY
box_apply
check "a timer restarted on its restart_on, waiting again" \
  '[ $RC = 0 ] && grep -q "^restarted tick (service): restart_on conf changed; mh-tick.timer" <<<"$OUT" && [ "$(state mh_2dtick_2etimer SubState)" = waiting ]'

before=$(cd "$T" && find state root -printf '%p %T@\n' | sort)
write 3 '{"id": "sock2", "kind": "service", "unit": "mh-other.socket", "state": "running", "restart_on": ["conf"]}'; box_apply
check "restart_on on a socket is refused before anything is touched" \
  '[ $RC = 2 ] && grep -q "resource sock2, field restart_on: systemd refuses to restart mh-other.socket while the service it activates runs" <<<"$OUT"'
write 3 '{"id": "tick2", "kind": "service", "unit": "mh-tock.timer", "state": "running", "reload_on": ["conf"]}'; box_apply
check "reload_on on a timer is refused too" \
  '[ $RC = 2 ] && grep -q "resource tick2, field reload_on: mh-tock.timer cannot be reloaded" <<<"$OUT"'
check "and nothing was written" '[ "$before" = "$(cd "$T" && find state root -printf "%p %T@\n" | sort)" ]'

# A socket's new definition while the service it activates runs: systemd
# would stop the socket and refuse to start it again ("already active,
# refusing"), leaving nothing listening. The restart waits, said and owed.
sockdecl() {  # sockdecl GENERATION BACKLOG: the socket's service left to it
  python3 - "$T/decl.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["generation"] = int(sys.argv[2])
d["resources"] = [r for r in d["resources"] if r["id"] not in ("sock2", "tick2")]
for r in d["resources"]:
    if r["id"] == "echo-job":
        # It takes the connection (one left queued would start it again
        # when stopped), then stays.
        r["state"] = "triggered"
        r["unit_text"] = ("[Service]\nExecStart=/usr/bin/python3 -c \"import socket, time; "
                          "socket.socket(fileno=3).accept(); time.sleep(1000)\"\n")
    if r["id"] == "echo":
        r["unit_text"] = r["unit_text"].split("Backlog=")[0] + f"Backlog={sys.argv[3]}\n"
json.dump(d, open(sys.argv[1], "w"))
PY
}
sockdecl 4 16; box_apply
check "the socket's service, triggered, is left to it; the socket restarted on its new definition" \
  '[ $RC = 0 ] && [ "$(state mh_2decho_2esocket SubState)" = listening ]'
inside python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$SOCK')"
until_true 5 '[ "$(state mh_2decho_2eservice ActiveState)" = active ]' || true
check "a connection starts the socket's service" \
  '[ "$(state mh_2decho_2eservice ActiveState)" = active ]'
for apply in 1 2; do
  sockdecl 5 32; box_apply
  check "a new socket definition under its running service fails, said (apply $apply)" \
    '[ $RC = 1 ] && grep -q "^failed echo (service): not restarted: its service mh-echo.service active (running) .*, and systemd refuses to start mh-echo.socket again while it runs" <<<"$OUT"'
  check "... and the socket is still up, its path there (apply $apply)" \
    '[ "$(state mh_2decho_2esocket ActiveState)" = active ] && inside test -S "$SOCK"'
done
busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager \
  StopUnit ss mh-echo.service replace >/dev/null
until_true 5 '[ "$(state mh_2decho_2eservice ActiveState)" != active ]' || true
box_apply
check "once its service stopped, the socket is restarted on the new definition" \
  '[ $RC = 0 ] && grep -q "^restarted echo (service)" <<<"$OUT" && [ "$(state mh_2decho_2esocket SubState)" = listening ]'
"$SDBOX" down >/dev/null 2>&1 || true
rm -f "$SOCK"
finish
