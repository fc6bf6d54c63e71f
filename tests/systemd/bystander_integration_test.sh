#!/usr/bin/env bash
# ADR 184's incident as systemd passes it on, against a real systemd: a unit
# PartOf= (or Requires=) one the apply restarts is restarted with it, and one
# that Conflicts= a unit the apply starts is stopped. The host looks at every
# unit declared running along with those it acted on: one taken down fails
# the apply; one restarted by systemd and running is said so; one left alone
# is unchanged, and a no-op after it touches nothing.
. "$(dirname "$0")/box_suite.sh" bystander
mkdir -p "$T/root"
apply() {  # apply GENERATION CONF [OTHER_STATE]
  python3 - "$T/decl.json" "$1" "$2" "${3:-stopped}" "$T" <<'PY'
import json, sys
path, gen, conf, other, t = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
svc = lambda n, text, **more: {"id": n, "kind": "service", "unit": f"by-{n}.service",
                               "state": "running", "unit_text": text, **more}
json.dump({"machine": "box", "generation": gen, "resources": [
  {"id": "conf", "kind": "file", "path": "/etc/server.conf", "content": conf},
  svc("server", "[Service]\nExecStart=/bin/sleep 1001\n", restart_on=["conf"]),
  # Started again with the server; it dies on a second start once $T/die is there.
  svc("client", "[Unit]\nPartOf=by-server.service\nAfter=by-server.service\n"
                f"[Service]\nExecStart=/bin/sh -c 'test ! -e {t}/die || exit 3; exec sleep 1002'\n"),
  svc("steady", "[Service]\nExecStart=/bin/sleep 1003\n"),
  # Part of the server, not ordered after it: it stops beside it, draining
  # for a second, and starts again.
  svc("drainer", "[Unit]\nPartOf=by-server.service\n"
                 "[Service]\nExecStart=/bin/sleep 1005\nExecStop=/bin/sleep 1\n"),
  # Requires= and ordered after a server slow to come up: stopped with its
  # restart, its own start waits in systemd's queue until it is up.
  svc("slow", f"[Service]\nExecStartPre=/bin/sh -c 'test ! -e {t}/slow || sleep 1.5'\n"
              "ExecStart=/bin/sleep 1006\n", restart_on=["conf"]),
  svc("waiter", "[Unit]\nRequires=by-slow.service\nAfter=by-slow.service\n"
                "[Service]\nExecStart=/bin/sleep 1007\n"),
  {"id": "other", "kind": "service", "unit": "by-other.service", "state": other,
   "unit_text": "[Unit]\nConflicts=by-steady.service\n[Service]\nExecStart=/bin/sleep 1004\n"},
]}, open(path, "w"))
PY
  box_apply
}
prop() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/by_2d$1_2eservice" \
           org.freedesktop.systemd1.Unit "$2" | cut -d' ' -f2- | tr -d '"'; }
invocation() { busctl get-property org.freedesktop.systemd1 "/org/freedesktop/systemd1/unit/by_2d$1_2eservice" \
                 org.freedesktop.systemd1.Unit InvocationID | cut -d' ' -f3-; }

apply 1 a
touch "$T/slow"  # from now on, the slow server takes 1.5 s to come up
check "all three up" '[ $RC = 0 ] && [ "$(prop client ActiveState)" = active ] && [ "$(prop steady ActiveState)" = active ]'
client=$(invocation client) steady=$(invocation steady)

apply 2 b
check "the server's restart restarts the client: said, and the apply good" \
  '[ $RC = 0 ] && grep -q "^unchanged client (service): by-client.service active (running), started anew during this apply" <<<"$OUT" && [ "$(invocation client)" != "$client" ]'
check "one still stopping at the second look is looked at until it is up again" \
  'grep -q "^unchanged drainer (service): by-drainer.service active (running), started anew during this apply" <<<"$OUT"'
check "one whose start is queued behind a server still coming up is on its way, not down" \
  'grep -q "^unchanged waiter (service): by-waiter.service inactive (dead), stopped with a unit this apply acted on; its start is queued behind one it is ordered after" <<<"$OUT"'
check "... and it is up once that server is" 'until_true 10 "[ \"\$(prop waiter ActiveState)\" = active ]"'
check "a unit no action reached is unchanged as it was" \
  'grep -qx "unchanged steady (service): by-steady.service active (running)" <<<"$OUT" && [ "$(invocation steady)" = "$steady" ]'
client=$(invocation client)
until_true 10 '[ "$(prop waiter ActiveState)" = active ]' || true
apply 2 b
check "a no-op after it touches nothing" \
  '[ $RC = 0 ] && [ "$(invocation client)" = "$client" ] && ! grep -Eq "^(created|updated|started|restarted|reloaded|stopped|removed|failed) " <<<"$OUT"'

touch "$T/die"
apply 3 c
check "a client taken down with the server's restart fails the apply (it exited 3)" \
  '[ $RC = 1 ] && grep -q "^failed client (service): by-client.service went down during this apply: failed (Result=exit-code), declared running" <<<"$OUT" && [ "$(prop client ActiveState)" = failed ]'
rm "$T/die"

apply 4 c running
check "a unit stopped because one the apply started conflicts with it fails the apply" \
  '[ $RC = 1 ] && grep -q "^failed steady (service): by-steady.service went down during this apply" <<<"$OUT" && [ "$(prop steady ActiveState)" = inactive ]'

finish
