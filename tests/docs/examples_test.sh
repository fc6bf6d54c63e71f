#!/usr/bin/env bash
# examples/README.md, followed as written: every ```sh block in order, from
# the repository's top directory, as root in a real systemd's box
# (sdbox.sh) with /etc, /opt, /srv and /var/lib copy-on-write there. Then
# what each example promises is checked in what the commands printed.
. "$PWD/tests/systemd/box_suite.sh" examples
README=$PWD/examples/README.md
# web.service listens where the README says, on this machine's loopback.
if (exec 3<>/dev/tcp/127.0.0.1/8931) 2>/dev/null; then
  echo "SKIP (LOUD): 127.0.0.1:8931 is in use on this machine; the web example would not listen"
  finish; exit
fi
box_cow /etc /opt /srv /var/lib
mkdir -p "$T/bin" "$T/repo"
cp "$BIN" "$T/bin/mesh-host"
cp "$(dirname "$BIN")/mesh-host-serve" "$T/bin/"  # `run` and `status` are its
# The files themselves, not the runfiles' symlinks to them: tar packs what
# it finds.
cp -rL examples "$T/repo/"
{
  echo 'set -euo pipefail'
  echo "export PATH=$T/bin:\$PATH"
  echo 'unset DBUS_SYSTEM_BUS_ADDRESS  # in the box, the default bus is its own'
  echo "cd $T/repo"
  awk '/^```sh$/ {on=1; next} /^```$/ {on=0} on' "$README"
} > "$T/steps.sh"
set +e
inside timeout 180 bash "$T/steps.sh" > "$T/out" 2>&1
rc=$?
set -e
sed 's/^/    /' "$T/out"
out() { grep -Eq -- "$1" "$T/out"; }
check "every command ran (exit 0)" '[ "$rc" = 0 ]'
check "web: the service runs, enabled at boot" 'out "^created web \(service\): wrote unit file web.service, running as web.service \(active \(running\)\); enabled web.service"'
check "web: it serves the declared page on the declared port" 'out "^<h1>served by web.service, declared by mesh-host</h1>$"'
check "drop-in: both drop-ins written, the unit restarted onto them" 'out "^(updated|created) app \(service\): .*10-limits.conf.*20-restart.conf.*app.service \(active \(running\)\)"'
check "drop-in: systemd runs app.service with them" 'out "^LimitNOFILE=65536$" && out "^Restart=on-failure$"'
check "drop-in: the web example was pruned by it" 'out "^removed web \(service\): stopped web.service" && out "^removed web.root \(directory\): deleted 1 path"'
check "bundle: the digest in the declaration is the reproducible pack" \
  'out "^$(sed -n "s/.*\"sha256\": \"\([0-9a-f]*\)\".*/\1/p" "$T/repo/examples/bundle-process/declaration.json")  /var/lib/mesh-host/artifacts/greeter-1.0.tar.gz$"'
check "bundle: unpacked and run" 'out "^created greeter \(process\): unpacked 1 file\(s\), .*running as greeter.service \(active \(running\)\)"'
check "oneshot: run once" 'out "^created motd-render \(service\): .*finished \(Result=success\)" && out "^This machine is managed by mesh-host"'
check "oneshot: not run again while nothing changed" 'out "^unchanged motd-render \(service\)"'
check "the empty declaration takes the oneshot away" 'out "^removed motd-render \(service\)" && out "^removed motd \(file\)"'
finish
