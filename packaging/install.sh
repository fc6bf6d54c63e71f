#!/bin/sh
# Installs a built mesh-host as a systemd service on this machine.
# Usage: bazel build //host:mesh-host && sudo packaging/install.sh
set -eu
cd "$(dirname "$0")/.."
install -m 0755 bazel-bin/host/mesh-host /usr/local/bin/mesh-host
install -d -m 0755 /usr/local/lib/mesh-host
install -m 0755 bazel-bin/host/mesh-host-serve /usr/local/lib/mesh-host/mesh-host-serve
install -d -m 0755 /usr/local/share/doc/mesh-host
# The declaration lives here and may hold credentials: only root looks in.
install -d -m 0700 /etc/mesh-host
[ -e /etc/mesh-host/mesh-host.env ] || install -m 0644 packaging/mesh-host.env /etc/mesh-host/mesh-host.env
install -m 0644 packaging/mesh-host.service /etc/systemd/system/mesh-host.service
install -m 0644 README.md /usr/local/share/doc/mesh-host/README.md
install -d -m 0700 /var/lib/mesh-host /var/lib/mesh-host/artifacts
systemctl daemon-reload
echo "installed; put the declaration at /etc/mesh-host/declaration.json, then: systemctl enable --now mesh-host"
