#!/usr/bin/env bash
# The Debian package (//packaging:deb): what it holds, what it depends on,
# and an install, reinstall, remove and purge by dpkg into a scratch root
# (dpkg --root; the maintainer scripts run unchrooted with DPKG_ROOT set,
# so they touch only the scratch root and ask no service manager anything).
# What the scripts do against a running systemd is
# tests/systemd/deb_scripts_test.sh.
set -euo pipefail
DEB=$PWD/packaging/mesh-host.deb
T=$(mktemp -d "${TEST_TMPDIR:-/tmp}/deb.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
check() { if eval "$2"; then echo "ok   - $1"; else echo "FAIL - $1"; fails=$((fails+1)); fi; }
field() { dpkg-deb -f "$DEB" "$1"; }

# What it holds: exactly these paths (directories aside).
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort > "$T/files"
cat > "$T/want" <<'LIST'
/etc/mesh-host/mesh-host.env
/lib/systemd/system/mesh-host.service
/usr/bin/mesh-host
/usr/lib/mesh-host/mesh-host-serve
/usr/share/bash-completion/completions/mesh-host
/usr/share/doc/mesh-host/README.md
/usr/share/doc/mesh-host/alerts.md
/usr/share/doc/mesh-host/architecture.md
/usr/share/doc/mesh-host/changelog.gz
/usr/share/doc/mesh-host/copyright
/usr/share/doc/mesh-host/declaration.md
/usr/share/doc/mesh-host/declaration.schema.json
/usr/share/doc/mesh-host/examples/fleet/alertmanager.yml
/usr/share/doc/mesh-host/examples/fleet/prometheus-global.yml
/usr/share/doc/mesh-host/examples/fleet/prometheus-shard.yml
/usr/share/doc/mesh-host/examples/fleet/prometheus.yml
/usr/share/doc/mesh-host/examples/fleet/targets/edge.json
/usr/share/doc/mesh-host/examples/prometheus/one-host.yml
/usr/share/doc/mesh-host/fleet.md
/usr/share/doc/mesh-host/images/page-failing.png
/usr/share/doc/mesh-host/images/page-healthy.png
/usr/share/doc/mesh-host/metrics.md
/usr/share/doc/mesh-host/performance.md
/usr/share/doc/mesh-host/quickstart.md
/usr/share/doc/mesh-host/record.md
/usr/share/doc/mesh-host/reliability.md
/usr/share/doc/mesh-host/troubleshooting.md
/usr/share/doc/mesh-host/two-looks.md
/usr/share/man/man1/mesh-host.1.gz
/usr/share/mesh-host/alerts/fleet.rules.yml
/usr/share/mesh-host/alerts/mesh-host.rules.yml
/usr/share/mesh-host/dashboards/mesh-host-fleet.json
LIST
check "holds exactly the expected files" 'diff -u "$T/want" "$T/files"'
check "every path owned by root" '! dpkg-deb -c "$DEB" | awk "{print \$2}" | grep -v "^root/root$"'
# Modes are the package's, whatever the builder's umask was.
check "directories 0755 (/etc/mesh-host 0700), files 0644, the binaries 0755" \
  '! dpkg-deb -c "$DEB" | awk "{print \$1, \$6}" | grep -Ev "^(drwxr-xr-x .*/|drwx------ \./etc/mesh-host/|-rw-r--r-- .*[^/]|-rwxr-xr-x \./usr/(bin/mesh-host|lib/mesh-host/mesh-host-serve))$"'
# Issue 39: the declaration's directory, which may hold credentials, is
# root's alone.
check "/etc/mesh-host is 0700" 'dpkg-deb -c "$DEB" | grep "^drwx------ root/root .* \./etc/mesh-host/$" >/dev/null'
check "every file dated the release, not the build" '[ "$(dpkg-deb -c "$DEB" | awk "{print \$4}" | sort -u | wc -l)" = 1 ]'
check "control: package, section, architecture" \
  '[ "$(field Package)" = mesh-host ] && [ "$(field Section)" = admin ] && [ "$(field Architecture)" = "$(dpkg --print-architecture)" ]'
# Depends: from dpkg-shlibdeps for what the binaries link, and named by
# build_deb.sh for the two loaded on first use (libsystemd0, libcrypt1).
depends=$(field Depends)
for lib in libc6 libstdc++6 libsystemd0 libssl3 libcpp-httplib0.11 libprometheus-cpp-core1.0 libcrypt1 libsimdjson14 zlib1g; do
  check "Depends names $lib" 'tr , "\\n" <<<"$depends" | sed "s/^ *//; s/ .*//" | grep -Fxq "$lib"'
done
check "the conffile is the env file" '[ "$(dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles)" = /etc/mesh-host/mesh-host.env ]'

mkdir -p "$T/x"
dpkg-deb -x "$DEB" "$T/x"
check "the unit runs the packaged binary" \
  'grep -qx "ExecStart=/usr/bin/mesh-host run \$MESH_HOST_FLAGS" "$T/x/lib/systemd/system/mesh-host.service" && ! grep -q /usr/local "$T/x/lib/systemd/system/mesh-host.service"'
check "the unit points to the man page" 'grep -q "^Documentation=man:mesh-host(1)" "$T/x/lib/systemd/system/mesh-host.service"'
check "the binaries are stripped" \
  '! readelf -S "$T/x/usr/bin/mesh-host" | grep -q "\.symtab" && ! readelf -S "$T/x/usr/lib/mesh-host/mesh-host-serve" | grep -q "\.symtab"'
check "--version names the package's release" \
  '"$T/x/usr/bin/mesh-host" --version | grep -q "^mesh-host $(field Version) "'
check "the man page is gzipped roff that renders" 'zcat "$T/x/usr/share/man/man1/mesh-host.1.gz" | groff -man -Tutf8 -ww -z'

# Install into a scratch root.
R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers"
: > "$R/var/lib/dpkg/status"; : > "$R/var/lib/dpkg/available"
dpkgr() { dpkg --root="$R" --log=/dev/null --force-script-chrootless --force-depends --force-not-root "$@" >"$T/dpkg.out" 2>&1 || { cat "$T/dpkg.out"; return 1; }; }
check "dpkg installs it into the scratch root" 'dpkgr -i "$DEB"'
check "dpkg lists it installed" 'dpkg-query --admindir="$R/var/lib/dpkg" -W -f="\${Status}" mesh-host | grep -qx "install ok installed"'
dpkg-query --admindir="$R/var/lib/dpkg" -L mesh-host | sort > "$T/listed"
check "every listed file is in the root" 'while read -r f; do [ -e "$R$f" ] || exit 1; done < "$T/listed"'
check "postinst made the state dir 0700" '[ "$(stat -c %a "$R/var/lib/mesh-host")" = 700 ] && [ -d "$R/var/lib/mesh-host/artifacts" ]'
check "postinst asked no service manager (scratch root)" '! grep -q "enable --now" "$T/dpkg.out"'
check "postinst warns of nothing on a clean root" '! grep -q "shadows the package" "$T/dpkg.out"'
check "the installed binary runs" '"$R/usr/bin/mesh-host" --help | grep "^usage: mesh-host VERB" >/dev/null'
# `status` is mesh-host-serve's, found in ../lib/mesh-host: it gets as far
# as the (closed) port.
check "... and finds mesh-host-serve for status" \
  '! "$R/usr/bin/mesh-host" status --url http://127.0.0.1:1 >"$T/st.out" 2>&1 && ! grep -q "runs mesh-host-serve" "$T/st.out" && grep -q "127.0.0.1:1" "$T/st.out"'
echo 'MESH_HOST_FLAGS=--listen 127.0.0.1:9999' > "$R/etc/mesh-host/mesh-host.env"
echo '{"machine":"m","resources":[]}' > "$R/etc/mesh-host/declaration.json"
echo 'record' > "$R/var/lib/mesh-host/state.json"
echo 'bundle' > "$R/var/lib/mesh-host/artifacts/app-1.0.tar.gz"
check "a reinstall (upgrade) keeps the operator's env file" 'dpkgr -i "$DEB" && grep -q 9999 "$R/etc/mesh-host/mesh-host.env"'
check "... and the record" '[ "$(cat "$R/var/lib/mesh-host/state.json")" = record ]'
mkdir -p "$R/usr/local/bin" && cp "$R/usr/bin/mesh-host" "$R/usr/local/bin/mesh-host"
check "an install.sh binary left behind is named on upgrade" \
  'dpkgr -i "$DEB" && grep -q "/usr/local/bin/mesh-host (from packaging/install.sh) shadows the package" "$T/dpkg.out"'
rm -r "$R/usr/local"
wants=$R/etc/systemd/system/multi-user.target.wants
mkdir -p "$wants"
ln -s /lib/systemd/system/mesh-host.service "$wants/mesh-host.service"
check "remove" 'dpkgr -r mesh-host'
check "... drops the enable link of the packaged unit" '[ ! -L "$wants/mesh-host.service" ]'
# systemd without split-usr (255 on) links the packaged unit under /usr/lib.
ln -s /usr/lib/systemd/system/mesh-host.service "$wants/mesh-host.service"
dpkgr -i "$DEB"
check "... and one systemd made under /usr/lib" 'dpkgr -r mesh-host && [ ! -L "$wants/mesh-host.service" ]'
ln -s /etc/systemd/system/mesh-host.service "$wants/mesh-host.service"
dpkgr -i "$DEB" && dpkgr -r mesh-host
check "... but not one of an install.sh unit" '[ -L "$wants/mesh-host.service" ]'
rm -r "$R/etc/systemd"
check "... deletes the files, the conffile and record aside" \
  '[ ! -e "$R/usr/bin/mesh-host" ] && [ ! -e "$R/lib/systemd/system/mesh-host.service" ] && [ -f "$R/etc/mesh-host/mesh-host.env" ] && [ -f "$R/var/lib/mesh-host/state.json" ]'
# Everything the host keeps of the machine: a kept last good (on_failure:
# rollback) outliving a purge would hold a reinstall's unit at old content.
for f in intent.json digest.key last-good.json kept-artifacts/$(printf 'a%.0s' {1..64}) \
         kept-artifacts/.aaaa.mesh-host-tmp.1.1; do
  mkdir -p "$(dirname "$R/var/lib/mesh-host/$f")"; echo kept > "$R/var/lib/mesh-host/$f"
done
check "purge" 'dpkgr -P mesh-host'
check "... deletes the conffile and the record, keeps the declaration and the bundles" \
  '[ ! -e "$R/etc/mesh-host/mesh-host.env" ] && [ ! -e "$R/var/lib/mesh-host/state.json" ] && [ -f "$R/etc/mesh-host/declaration.json" ] && [ -f "$R/var/lib/mesh-host/artifacts/app-1.0.tar.gz" ]'
check "... and the intent, the digest key and the last good with its bundles" \
  '[ ! -e "$R/var/lib/mesh-host/intent.json" ] && [ ! -e "$R/var/lib/mesh-host/digest.key" ] && [ ! -e "$R/var/lib/mesh-host/last-good.json" ] && [ ! -e "$R/var/lib/mesh-host/kept-artifacts" ]'
rm -r "$R/etc/mesh-host" "$R/var/lib/mesh-host"
left=$(cd "$R" && find . -mindepth 1 -not -path './var/lib/dpkg*' -not -type d | sort)
check "... and leaves no other file behind${left:+: $left}" '[ -z "$left" ]'

# The life cycle (issue 40, item 7), as docs/troubleshooting.md tells it:
# the packaged host manages a file; a declaration with no resources takes it
# off; a purge then leaves nothing of the host's behind. Purged with the
# file still managed, the purge says what stays and how to avoid it.
check "life cycle: install again" 'dpkgr -i "$DEB"'
M=$T/machine; D=$R/etc/mesh-host/declaration.json
mkdir -p "$M/etc"
# The apply's lines, whole: `host | grep -q` under pipefail failed whenever
# grep had its line and left before the apply wrote its last (SIGPIPE).
host() { "$R/usr/bin/mesh-host" apply --declaration "$D" --root "$M" --state-dir "$R/var/lib/mesh-host" \
           --unit-dir "$T/units" --machine m > "$T/host.out" 2>&1 || true; cat "$T/host.out"; }
said() { host > /dev/null; grep -q "$1" "$T/host.out"; }
decl() { printf '{"machine":"m","generation":%s,"resources":[%s]}' "$1" "$2" > "$D"; chmod 0600 "$D"; }
A='{"id":"a","kind":"file","path":"/etc/a.conf","content":"x\n"}'
decl 1 "$A"
check "... the packaged host manages a file" 'said "^created a (file)"'
decl 2 ""
check "... a declaration with no resources takes it off" \
  'said "^removed a (file)" && [ ! -e "$M/etc/a.conf" ]'
check "... then a purge has nothing to warn of" 'dpkgr -P mesh-host && ! grep -q "stays on" "$T/dpkg.out"'
check "... a reinstall manages the file afresh" 'dpkgr -i "$DEB" && decl 1 "$A" && said "^created a (file)"'
check "a purge with the file still managed says what stays and how to avoid it" \
  'dpkgr -P mesh-host && grep -q "the record named what the host wrote" "$T/dpkg.out" && grep -q "apply a declaration with no resources, then purge" "$T/dpkg.out"'
check "... and the file stays" '[ -f "$M/etc/a.conf" ]'
# What a reinstall adopts, as troubleshooting.md says: no record, so the
# file already as declared is taken over without a write, and, once no
# longer declared, left: the host never prunes what it did not record
# writing.
check "... a reinstall adopts it, unwritten" \
  'dpkgr -i "$DEB" && said "^unchanged a (file): adopted: already as declared"'
decl 2 ""
check "... and, dropped, leaves it: there before the host managed it" \
  'said "^removed a (file): no longer managed; left /etc/a.conf, there before the host managed it" && [ -f "$M/etc/a.conf" ]'
echo "deb: $fails failed"
[ "$fails" = 0 ]
