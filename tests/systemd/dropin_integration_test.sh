#!/usr/bin/env bash
# Issue 20 against a real systemd: a drop-in declared as a `file` inside
# --unit-dir is a unit definition. Changed, it is loaded (one daemon-reload)
# before its unit is restarted, so the daemon runs the new setting; dropped,
# it is deleted, loaded away, and the unit restarted onto its absence.
# Judged by what the daemon saw ($V at its start), not by the host's words.
# Under /tmp, not Bazel's TEST_TMPDIR: declared paths here are real paths
# (--root /), walked without following symlinks.
. "$(dirname "$0")/box_suite.sh" dropin /tmp
apply() {  # apply GENERATION [V]: the service, and its drop-in setting V when given
  python3 - "$T/decl.json" "$UNITS" "$T/seen" "$@" <<'PY'
import json, sys
path, units, seen, gen = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
res = [{"id": "env", "kind": "service", "unit": "mh-env.service", "state": "running",
        "unit_text": f"[Service]\nEnvironment=V=none\nExecStart=/bin/sh -c 'echo $V > {seen}; exec sleep 1000'\n"}]
if len(sys.argv) > 5:
    res.append({"id": "env.v", "kind": "file", "path": f"{units}/mh-env.service.d/v.conf",
                "content": f"[Service]\nEnvironment=V={sys.argv[5]}\n"})
json.dump({"machine": "box", "generation": gen, "resources": res}, open(path, "w"))
PY
  box_apply /
}
need_reload() { busctl get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/mh_2denv_2eservice \
                  org.freedesktop.systemd1.Unit NeedDaemonReload | cut -d' ' -f2; }

apply 1 one
check "the first apply runs the daemon with the drop-in's setting" '[ $RC = 0 ] && [ "$(cat $T/seen)" = one ]'
apply 2 two
check "a changed drop-in: the daemon runs the new setting" '[ $RC = 0 ] && [ "$(cat $T/seen)" = two ]'
check "and says why it restarted" 'grep -q "^restarted env (service): unit definition .*/mh-env.service.d/v.conf changed; mh-env.service active (running)" <<<"$OUT"'
check "systemd has loaded what is on disk" '[ "$(need_reload)" = false ]'
apply 3
check "a dropped drop-in is deleted" '[ $RC = 0 ] && [ ! -e "$UNITS/mh-env.service.d/v.conf" ]'
check "and the daemon runs without it" '[ "$(cat $T/seen)" = none ] && [ "$(need_reload)" = false ]'
apply 3
check "then nothing to do" '[ $RC = 0 ] && grep -q "^unchanged env (service)" <<<"$OUT" && [ "$(cat $T/seen)" = none ]'

finish
