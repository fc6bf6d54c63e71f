# Installs the Debian packages mesh-host needs, only when some are missing.
# Sourced by tools/test and tools/demo; idempotent; needs root to install.

MESH_HOST_PACKAGES=(
  bazel-bootstrap g++ pkg-config
  libcpp-httplib-dev nlohmann-json3-dev libsimdjson-dev prometheus-cpp-dev libsystemd-dev
  libgtest-dev libgmock-dev libarchive-dev libssl-dev zlib1g-dev libbrotli-dev
  liblzma-dev libbz2-dev libxml2-dev nettle-dev
  systemd dbus util-linux bsdutils coreutils curl prometheus prometheus-alertmanager python3
  strace minisign libdtl-dev libyaml-cpp-dev libcrypt-dev openssl python3-jsonschema
  dpkg-dev groff-base groff iproute2 chromium fonts-dejavu-core
)

ensure_packages() {
  local missing=()
  local p
  for p in "${MESH_HOST_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  echo "mesh-host: installing missing Debian packages: ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "mesh-host: run as root (or install them yourself): apt-get install ${missing[*]}" >&2
    return 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  # prometheus's postinst may try to start a service; there is no systemd
  # here, so keep it from starting anything.
  # A policy the machine had (a container image's) is put back, and ours
  # goes whether the install succeeds or not.
  local saved="" rc=0
  if [ -e /usr/sbin/policy-rc.d ]; then
    saved=$(mktemp) && cp -p /usr/sbin/policy-rc.d "$saved"
  fi
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 || rc=$?
  if [ -n "$saved" ]; then
    mv -f "$saved" /usr/sbin/policy-rc.d
  else
    rm -f /usr/sbin/policy-rc.d
  fi
  return $rc
}

# /etc/machine-id must be valid for the sandboxed systemd of the tests.
ensure_machine_id() {
  if ! grep -Eqx '[0-9a-f]{32}' /etc/machine-id 2>/dev/null; then
    systemd-machine-id-setup >/dev/null 2>&1 || \
      (od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > /etc/machine-id; echo >> /etc/machine-id)
  fi
}
