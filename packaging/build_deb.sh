#!/usr/bin/env bash
# Builds mesh-host.deb from the built binary and the packaging files (run by
# the //packaging:deb genrule; tools/package names the result). Depends: is
# what dpkg-shlibdeps computes from the binary's shared libraries, and the
# one it loads itself.
#   build_deb.sh OUT RELEASE DATE BINARY SERVE UNIT ENV MANPAGE COMPLETION DEBIAN_DIR DOC... \
#     -- RULES... -- DASHBOARDS... -- EXAMPLES...
# (EXAMPLES: files under examples/, installed under the doc's examples/.)
# (SERVE: mesh-host-serve, which mesh-host runs for `run` and `status`.)
# The same inputs make the same package: modes set whatever the umask, every
# file dated DATE (the release's), sizes as the files' own.
set -euo pipefail
umask 022
out=$1 release=$2 date=$3 binary=$4 serve=$5 unit=$6 env=$7 man=$8 completion=$9 debian=${10}
shift 10
docs=() rules=() dashboards=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do docs+=("$1"); shift; done
[ $# -gt 0 ] && shift
while [ $# -gt 0 ] && [ "$1" != -- ]; do rules+=("$1"); shift; done
[ $# -gt 0 ] && shift
while [ $# -gt 0 ] && [ "$1" != -- ]; do dashboards+=("$1"); shift; done
[ $# -gt 0 ] && shift
examples=("$@")

work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
root=$work/root
for d in DEBIAN etc etc/mesh-host lib lib/systemd lib/systemd/system usr usr/bin usr/share \
  usr/share/man usr/share/man/man1 usr/share/bash-completion usr/share/bash-completion/completions \
  usr/share/doc usr/share/doc/mesh-host usr/share/doc/mesh-host/images usr/share/mesh-host \
  usr/share/mesh-host/alerts usr/share/mesh-host/dashboards \
  usr/lib usr/lib/mesh-host; do
  install -d -m 0755 "$root/$d"
done
# The declaration lives here and may hold credentials: only root looks in.
chmod 0700 "$root/etc/mesh-host"
chmod 0755 "$root"
install -m 0755 "$binary" "$root/usr/bin/mesh-host"
install -m 0755 "$serve" "$root/usr/lib/mesh-host/mesh-host-serve"
strip --strip-unneeded "$root/usr/bin/mesh-host" "$root/usr/lib/mesh-host/mesh-host-serve"
# The unit in packaging/ is install.sh's (/usr/local); a package owns /usr.
sed -e 's|/usr/local/bin/mesh-host|/usr/bin/mesh-host|' \
    -e 's|^Documentation=.*|Documentation=man:mesh-host(1) file:///usr/share/doc/mesh-host/README.md|' \
    -e 's|^# mesh-host: the node agent.*|# mesh-host: the node agent, installed by the mesh-host package.|' \
    -e '/^# binary to \/usr\/local\/bin/d' -e '/^# \/etc\/mesh-host\/), then/d' \
    "$unit" > "$root/lib/systemd/system/mesh-host.service"
chmod 0644 "$root/lib/systemd/system/mesh-host.service"
install -m 0644 "$env" "$root/etc/mesh-host/mesh-host.env"
gzip -9n < "$man" > "$root/usr/share/man/man1/mesh-host.1.gz"
install -m 0644 "$completion" "$root/usr/share/bash-completion/completions/mesh-host"
install -m 0644 "$debian/copyright" "$root/usr/share/doc/mesh-host/copyright"
for d in "${docs[@]}"; do
  case $d in
    */CHANGELOG.md) gzip -9n < "$d" > "$root/usr/share/doc/mesh-host/changelog.gz" ;;
    */images/*) install -m 0644 "$d" "$root/usr/share/doc/mesh-host/images/$(basename "$d")" ;;
    *) install -m 0644 "$d" "$root/usr/share/doc/mesh-host/$(basename "$d")" ;;
  esac
done
for r in "${rules[@]}"; do
  case $r in *.test.yml) continue ;; esac
  install -m 0644 "$r" "$root/usr/share/mesh-host/alerts/$(basename "$r")"
done
for b in "${dashboards[@]}"; do
  case $b in *.json) install -m 0644 "$b" "$root/usr/share/mesh-host/dashboards/$(basename "$b")" ;; esac
done
for e in "${examples[@]}"; do
  rel=examples/${e##*/examples/}
  case $e in examples/*) rel=$e ;; esac
  case $rel in */BUILD|*/BUILD.bazel) continue ;; esac
  dir=$root/usr/share/doc/mesh-host/$(dirname "$rel")
  [ -d "$dir" ] || install -d -m 0755 "$dir"
  install -m 0644 "$e" "$root/usr/share/doc/mesh-host/$rel"
done
for s in postinst prerm postrm; do install -m 0755 "$debian/$s" "$root/DEBIAN/$s"; done
echo /etc/mesh-host/mesh-host.env > "$root/DEBIAN/conffiles"
chmod 0644 "$root/usr/share/man/man1/mesh-host.1.gz" "$root/usr/share/doc/mesh-host/changelog.gz" \
  "$root/DEBIAN/conffiles"

# dpkg-shlibdeps reads debian/control of the directory it runs in.
mkdir -p "$work/src/debian"
printf 'Source: mesh-host\n\nPackage: mesh-host\nArchitecture: any\n' > "$work/src/debian/control"
if ! shlibs=$(cd "$work/src" && dpkg-shlibdeps -O "$root/usr/bin/mesh-host" "$root/usr/lib/mesh-host/mesh-host-serve" 2>"$work/shlibdeps.err"); then
  echo "build_deb: dpkg-shlibdeps failed:" >&2; cat "$work/shlibdeps.err" >&2; exit 1
fi
depends=$(sed -n 's/^shlibs:Depends=//p' <<<"$shlibs")
[ -n "$depends" ] || { echo "build_deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# libsystemd.so.0 is loaded with dlopen when mesh-host first talks to
# systemd, so dpkg-shlibdeps cannot see it: 240 is what it computes for the
# sd-bus functions mesh-host calls (LIBSYSTEMD_240 the newest of them).
depends="$depends, libsystemd0 (>= 240)"
# libcrypt.so.1 likewise, when basic auth is configured (crypt_r, in
# libxcrypt's XCRYPT_2.0 since its first release in Debian).
depends="$depends, libcrypt1 (>= 1:4.1.0)"
size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: mesh-host
Version: $release
Architecture: $(dpkg --print-architecture)
Maintainer: mesh-host engineers <mesh-host@localhost>
Installed-Size: $size
Depends: $depends
Section: admin
Priority: optional
Homepage: file:///usr/share/doc/mesh-host/README.md
Description: node agent: makes this machine match its declaration
 mesh-host reads a declaration (files, credentials, bundles, directories,
 symlinks, systemd units), makes the machine match it, records what it
 wrote, and reports the truth about the result: a unit it restarts is
 looked at twice, and a machine that is right is never touched. It serves
 /status and Prometheus /metrics; the alerting rules are in
 /usr/share/mesh-host/alerts.
CONTROL
chmod 0644 "$root/DEBIAN/control"
find "$root" -exec touch -h -d "$date" {} +
SOURCE_DATE_EPOCH=$(date -d "$date" +%s) dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
