#!/usr/bin/env bash
# docs/quickstart.md, followed as written: every ```sh block in order, run as
# root in a real systemd's box (sdbox.sh) with the default paths — /etc,
# /opt and /var/lib are the machine's but copy-on-write, so the steps write
# only to the box — and its own network namespace (the page's port). Then
# every outcome line the page shows must be in what the commands printed
# (durations aside), and the last step must have left nothing running.
. "$PWD/tests/systemd/box_suite.sh" quickstart
DOC=$PWD/docs/quickstart.md
box_cow /etc /opt /var/lib
mkdir -p "$T/bin" "$T/home"
cp "$BIN" "$T/bin/mesh-host"
cp "$(dirname "$BIN")/mesh-host-serve" "$T/bin/"  # `run` and `status` are its
{
  echo 'set -euo pipefail'
  echo "export PATH=$T/bin:\$PATH HOME=$T/home"
  echo 'unset DBUS_SYSTEM_BUS_ADDRESS  # in the box, the default bus is its own'
  awk '/^```sh$/ {on=1; next} /^```$/ {on=0} on' "$DOC"
} > "$T/steps.sh"
set +e
inside unshare -n bash -c 'ip link set lo up && exec timeout 180 bash "$1"' - "$T/steps.sh" > "$T/out" 2>&1
rc=$?
set -e
sed 's/^/    /' "$T/out"
check "every step ran (exit 0)" '[ "$rc" = 0 ]'
# What changes from run to run: durations, times, the host name.
norm() { sed -E 's/[0-9]+\.[0-9]+ s\b/N s/g; s/[0-9-]{10}T[0-9:.]{12}Z/TIME/g; s/^machine [^ ]+ /machine M /'; }
awk '/^```text$/ {on=1; next} /^```$/ {on=0} on' "$DOC" | norm > "$T/shown"
norm < "$T/out" > "$T/printed"
while IFS= read -r line; do
  check "printed: $line" 'grep -Fxq -- "$line" "$T/printed"'
done < "$T/shown"
check "the page shows outcome lines (this test reads them)" '[ "$(grep -cE "^(created|unchanged|updated|failed|removed) " "$T/shown")" -ge 10 ]'
check "pruned: hello.service is not running" '[ "$(inside systemctl show hello.service -p ActiveState --value)" = inactive ]'
check "pruned: its unit file is gone" '[ ! -e "$SDBOX_DIR/config/hello.service" ]'
check "pruned: the files are gone" 'inside sh -c "[ ! -e /etc/hello/hello.conf ] && [ ! -e /etc/hello/token ] && [ ! -e /opt/hello/bin/hello ]"'
check "the machine's own /etc, /opt and /var/lib were not written" \
  '[ ! -e /etc/hello ] && [ ! -e /opt/hello ] && [ ! -e /var/lib/mesh-host/artifacts/hello-1.0.tar.gz ]'
check "what the page says stays, stays: /etc/hello, empty" 'inside sh -c "[ -d /etc/hello ] && [ -z \"\$(ls -A /etc/hello)\" ]"'
finish
