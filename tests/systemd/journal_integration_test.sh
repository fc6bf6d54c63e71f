#!/usr/bin/env bash
# Issue 40 (1) against a real systemd with journald (SDBOX_JOURNAL=1): beside
# a failed verdict, the failed run's own complaint — read from the journal
# by its InvocationID — in `mesh-host apply`'s output, on /status and in
# `mesh-host status`; a run that logged nothing says so.
export SDBOX_JOURNAL=1
. "$(dirname "$0")/box_suite.sh" journal
JOURNAL=/proc/$SDBOX_PID/root/run/log/journal
CONF='{"id":"jail.conf","kind":"file","path":"/etc/jail.conf","content":"%s\\n"}'
# ADR 184's daemon: it refuses any config but "good", saying why, and dies.
JAIL='{"id":"jail","kind":"service","unit":"jaild.service","state":"running","restart_on":["jail.conf"],"unit_text":"[Service]\nStandardOutput=journal\nStandardError=journal\nExecStart=/bin/sh -c '"'"'grep -q good '"$T"'/root/etc/jail.conf || { echo \"jaild: /etc/jail.conf line 3: unknown option bantime2\" >&2; sleep 0.2; exit 1; }; exec sleep infinity'"'"'\n"}'
# A daemon that dies without a word.
MUTE='{"id":"mute","kind":"service","unit":"mute.service","state":"running","restart_on":["jail.conf"],"unit_text":"[Service]\nStandardOutput=journal\nExecStart=/bin/sh -c '"'"'grep -q good '"$T"'/root/etc/jail.conf || { sleep 0.2; exit 1; }; exec sleep infinity'"'"'\n"}'
decl() { printf '{"machine":"box","generation":%s,"resources":[%s,%s,%s]}' "$1" "$(printf "$CONF" "$2")" "$JAIL" "$MUTE" > "$T/decl.json"; }
mkdir -p "$T/root/etc"
apply() {
  set +e
  OUT=$("$BIN" apply --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" \
        --artifacts "$T/art" --unit-dir "$UNITS" --machine box --settle 500ms \
        --journal-dir "$JOURNAL" 2>&1)
  RC=$?
  set -e
  printf '%s\n(exit %s)\n' "$OUT" "$RC" | sed 's/^/    /'
}
decl 1 good; apply
check "a good config runs, and no journal is shown" '[ $RC = 0 ] && ! grep -q "journal:" <<<"$OUT"'
decl 2 bad; apply
check "the refused config fails the apply" '[ $RC = 1 ] && grep -q "^failed jail (service): jaild.service failed (Result=exit-code)" <<<"$OUT"'
check "under it, the daemon's own complaint from the journal" \
  'grep -A1 "^failed jail (service)" <<<"$OUT" | grep -qx "  journal: jaild: /etc/jail.conf line 3: unknown option bantime2"'
check "a daemon that logged nothing says so" \
  'grep -A1 "^failed mute (service)" <<<"$OUT" | grep -qx "  journal: (the journal holds no line of this run)"'
# Without --journal-dir, as the packaged service runs: the machine's own
# journal (here the box's: its mount namespace, its bus). The restart is
# still pending, so this apply runs it again and it fails again.
set +e
OUT2=$(inside env -u DBUS_SYSTEM_BUS_ADDRESS "$BIN" apply --declaration "$T/decl.json" --root "$T/root" \
       --state-dir "$T/state" --artifacts "$T/art" --unit-dir "$UNITS" --machine box --settle 500ms 2>&1)
set -e
printf '%s\n' "$OUT2" | sed 's/^/    /'
check "the default journal, no --journal-dir: the same complaint" \
  'grep -A1 "^failed jail (service)" <<<"$OUT2" | grep -qx "  journal: jaild: /etc/jail.conf line 3: unknown option bantime2"'

# The daemon: /status and `mesh-host status` carry the same lines.
"$BIN" run --declaration "$T/decl.json" --root "$T/root" --state-dir "$T/state" --artifacts "$T/art" \
  --unit-dir "$UNITS" --machine box --settle 500ms --journal-dir "$JOURNAL" --interval 1h \
  --listen 127.0.0.1:0 2> "$T/run.log" &
PIDS+=($!)
until_true 30 'grep -q "^apply " "$T/run.log"'
URL=http://$(sed -n 's/^listening on \([0-9.:]*\).*/\1/p' "$T/run.log" | head -1)
check "run: the log carries the line under the failed unit" \
  'grep -A1 "^failed jail (service)" "$T/run.log" | grep -q "journal: jaild: /etc/jail.conf line 3: unknown option bantime2"'
check "run: /status unit.journal holds it" 'curl -s "$URL/status" | python3 -c "
import json, sys
r = {x[\"id\"]: x for x in json.load(sys.stdin)[\"resources\"]}
assert r[\"jail\"][\"unit\"][\"journal\"][\"lines\"][-1] == \"jaild: /etc/jail.conf line 3: unknown option bantime2\", r[\"jail\"]
assert r[\"mute\"][\"unit\"][\"journal\"] == {\"lines\": [], \"note\": \"the journal holds no line of this run\"}, r[\"mute\"]
assert r[\"jail.conf\"].get(\"unit\") is None
"'
set +e; ST=$("$BIN" status --url "$URL"); set -e
printf '%s\n' "$ST" | sed 's/^/    /'
check "status: the table shows it under the failed unit" \
  'grep -q "^    journal: jaild: /etc/jail.conf line 3: unknown option bantime2$" <<<"$ST"'
kill "${PIDS[@]}" 2>/dev/null || true; wait "${PIDS[@]}" 2>/dev/null || true; PIDS=()

# What systemd itself refused, in plain words: a daemon whose binary is not
# there (it never ran, so it logged nothing), and a unit systemd will not load.
GONE='{"id":"gone","kind":"service","unit":"gone.service","state":"running","unit_text":"[Service]\nExecStart=/usr/local/bin/jaild-missing --foreground\n"}'
BADSET='{"id":"badset","kind":"service","unit":"badset.service","state":"running","unit_text":"[Service]\nType=simple\n"}'
# A run whose command never ran and so logged nothing of its own: what
# systemd logged of that run (here: an EnvironmentFile= that is not there).
ENVX='{"id":"envx","kind":"service","unit":"envx.service","state":"running","unit_text":"[Service]\nEnvironmentFile=/nonexistent/envx.env\nExecStart=/bin/sleep infinity\n"}'
printf '{"machine":"box","generation":4,"resources":[%s,%s,%s]}' "$GONE" "$BADSET" "$ENVX" > "$T/decl.json"
apply
check "a run that never ran its command: what systemd logged of that run" \
  'grep -A3 "^failed envx (service)" <<<"$OUT" | grep -qx "  journal: envx.service: Failed to load environment files: No such file or directory" && ! grep -A3 "^failed envx (service)" <<<"$OUT" | grep -q "Failed with result"'
check "a missing ExecStart binary is named" \
  'grep -q "^failed gone (service): gone.service failed (Result=exit-code) [0-9.]* s after start: its ExecStart= command /usr/local/bin/jaild-missing could not be run: missing, or not executable (status 203/EXEC)$" <<<"$OUT"'
check "a unit systemd will not load says where systemd names the setting" \
  'grep -q "^failed badset (service): .*BadUnitSetting.* (systemd names the setting in its log: journalctl -u badset.service, or systemd-analyze verify on its unit file)$" <<<"$OUT"'
check "... and under it, what systemd logged of it: the setting it refuses" \
  'grep -A5 "^failed badset (service)" <<<"$OUT" | grep -c "^  journal: badset.service: Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing.$" | grep -qx 1'
finish
