#!/usr/bin/env bash
# --web-config (issue 21), end to end against `mesh-host run`: TLS with a
# certificate made here, basic auth with a bcrypt hash, client
# certificates, headers, a reload on SIGHUP, bad files refused at start,
# and `mesh-host status` reaching the host through all of it.
set -euo pipefail
BIN=$PWD/host/mesh-host
for tool in openssl curl python3; do
  command -v $tool >/dev/null || { echo "$tool is missing (tools/lib/packages.sh installs it)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/mesh-host-web.XXXXXX)
HOST=
trap '[ -z "$HOST" ] || kill -KILL $HOST 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; [ -f "$T/log" ] && tail -5 "$T/log"; exit 1; }
cd "$T"

# A CA, the host's certificate (for 127.0.0.1) and a client's.
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key; key server.key; key client.key; key other.key
openssl req -x509 -new -key ca.key -out ca.crt -subj /CN=mesh-test-ca -days 2 2>/dev/null
openssl req -new -key server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
  -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n') 2>/dev/null
openssl req -new -key client.key -out client.csr -subj /CN=prometheus 2>/dev/null
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 \
  -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
hash() { python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' "$1"; }
H1=$(hash right-horse); H2=$(hash battery-staple)
cat > web.yml <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
http_server_config:
  headers:
    X-Frame-Options: deny
basic_auth_users:
  prometheus: '$H1'
YML
printf '{"machine":"m","generation":1,"resources":[]}' > d.json
F=(--declaration d.json --root "$T/root" --state-dir "$T/st" --unit-dir "$T/u" --artifacts "$T/a" --machine m)
mkdir -p root
start() {
  : > "$T/log"  # this daemon's log only: never the last one's port or apply
  "$BIN" run "${F[@]}" --listen 127.0.0.1:0 --interval 1h --web-config "$T/web.yml" 2> "$T/log" &
  HOST=$!
  for _ in $(seq 1 100); do grep -q "^apply ok" "$T/log" 2>/dev/null && break; sleep 0.05; done
  PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/log" | head -1)
  [ -n "$PORT" ] || fail "did not start: $(cat "$T/log")"
}
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }
start
grep -q "listening on 127.0.0.1:$PORT (https)" log || fail "the log does not say https"
U=https://127.0.0.1:$PORT
[ "$(code --cacert ca.crt $U/status)" = 401 ] || fail "no credentials: not 401"
[ "$(code --cacert ca.crt -u prometheus:wrong $U/status)" = 401 ] || fail "wrong password: not 401"
[ "$(code --cacert ca.crt -u nobody:right-horse $U/status)" = 401 ] || fail "unknown user: not 401"
[ "$(code --cacert ca.crt -u prometheus:right-horse $U/metrics)" = 200 ] || fail "right password: not 200"
# The page for a browser is behind the same TLS and auth.
[ "$(code --cacert ca.crt $U/)" = 401 ] || fail "the page without credentials: not 401"
[ "$(code --cacert ca.crt -u prometheus:right-horse $U/)" = 200 ] || fail "the page with the password: not 200"
curl -s --cacert ca.crt -u prometheus:right-horse -D - -o /dev/null $U/healthz | grep -qi '^X-Frame-Options: deny' ||
  fail "the configured header is missing"
curl -s --cacert ca.crt -D - -o /dev/null $U/healthz | grep -qi '^WWW-Authenticate: Basic' ||
  fail "a 401 without WWW-Authenticate"
echo "ok   - TLS + basic auth: none/wrong/unknown user 401, right 200, headers set"

# Plain HTTP to the TLS port: no HTTP answer at all.
plain=$(curl -s --max-time 5 -D - http://127.0.0.1:$PORT/status || true)
if grep -q "HTTP/1" <<<"$plain" || grep -q machine <<<"$plain"; then fail "plain HTTP got an answer: $plain"; fi
echo "ok   - plain HTTP to the TLS port gets nothing"

# mesh-host status through TLS and basic auth.
printf 'right-horse\n' > pw
set +e; out=$("$BIN" status --url $U --ca ca.crt --user prometheus --password-file pw 2>&1); rc=$?; set -e
[ "$rc" = 0 ] && grep -q "^machine m " <<<"$out" || fail "status with credentials: rc $rc: $out"
set +e; out=$(MESH_HOST_PASSWORD=right-horse "$BIN" status --url $U --ca ca.crt --user prometheus 2>&1); rc=$?; set -e
[ "$rc" = 0 ] || fail "status with MESH_HOST_PASSWORD: rc $rc: $out"
set +e; out=$("$BIN" status --url $U --ca ca.crt 2>&1); rc=$?; set -e
[ "$rc" = 2 ] && grep -q "answered 401: it asks for a user" <<<"$out" || fail "status without a user: rc $rc: $out"
set +e; out=$("$BIN" status --url $U --user prometheus --password-file pw 2>&1); rc=$?; set -e
[ "$rc" = 2 ] || fail "status trusted a certificate no CA it knows signed: $out"
echo "ok   - mesh-host status: --ca, --user, --password-file / MESH_HOST_PASSWORD; 401 explained"

# SIGHUP: a new password and client certificates required.
CLIENT_TLS='tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt'
cat > web.yml <<YML
$CLIENT_TLS
basic_auth_users:
  prometheus: '$H2'
YML
kill -HUP $HOST
for _ in $(seq 1 100); do grep -q "re-read" log && break; sleep 0.05; done
grep -q -- "--web-config $T/web.yml re-read" log || fail "no reload in the log"
[ "$(code --cacert ca.crt -u prometheus:battery-staple $U/status)" = 000 ] ||
  fail "client-cert mode served a client without a certificate"
[ "$(code --cacert ca.crt --cert client.crt --key client.key -u prometheus:right-horse $U/status)" = 401 ] ||
  fail "the old password still works after the reload"
[ "$(code --cacert ca.crt --cert client.crt --key client.key -u prometheus:battery-staple $U/status)" = 200 ] ||
  fail "a client with its certificate and the new password: not 200"
openssl req -x509 -new -key other.key -out other.crt -subj /CN=stranger -days 2 2>/dev/null
[ "$(code --cacert ca.crt --cert other.crt --key other.key -u prometheus:battery-staple $U/status)" = 000 ] ||
  fail "a client certificate no trusted CA signed was accepted"
printf 'battery-staple\n' > pw
set +e; out=$("$BIN" status --url $U --ca ca.crt --cert client.crt --key client.key --user prometheus --password-file pw 2>&1); rc=$?; set -e
[ "$rc" = 0 ] || fail "status with a client certificate: rc $rc: $out"
# Without one, under TLS 1.3 the host refuses it after the handshake, as
# the request is written: a write to a closed connection is an error to
# say (exit 2), never a SIGPIPE that kills the command silently (141), and
# the client certificate it asks for is named.
for _ in 1 2 3 4 5 6; do
  set +e; out=$("$BIN" status --url $U --ca ca.crt --user prometheus --password-file pw --timeout 4s 2>&1); rc=$?; set -e
  [ "$rc" = 2 ] && grep -Eq "unreachable: (the TLS handshake failed: it asks for a client certificate \(--cert, --key\)|.* \(over TLS with no client certificate: a host that asks for one \(--cert, --key\) ends the connection so\))$" <<<"$out" ||
    fail "status without its client certificate: rc $rc: $out"
done
echo "ok   - SIGHUP re-reads it: new password, client certificates required and verified"

# A reload that does not read keeps the one in force.
printf 'tls_server_config:\n  cert_file: server.crt\n' > web.yml
kill -HUP $HOST
for _ in $(seq 1 100); do grep -q "is kept" log && break; sleep 0.05; done
grep -q "key_file: missing.*the web config in force is kept" log || fail "a bad reload is not reported"
[ "$(code --cacert ca.crt --cert client.crt --key client.key -u prometheus:battery-staple $U/status)" = 200 ] ||
  fail "a bad reload changed what is served"
echo "ok   - a bad file on SIGHUP is reported and the one in force kept"

# Issue 39 (1): an empty basic_auth_users: above another would turn auth off
# if the first one won, or change the password if the last one did: on
# SIGHUP it is refused by key and line, and the users in force (the
# battery-staple password) still guard every page.
cat > web.yml <<YML
$CLIENT_TLS
basic_auth_users:
basic_auth_users:
  prometheus: '$H1'
YML
kill -HUP $HOST
for _ in $(seq 1 100); do grep -q "given twice" log && break; sleep 0.05; done
grep -q "basic_auth_users: given twice (again at line 7).*the web config in force is kept" log ||
  fail "a key given twice on SIGHUP is not refused by key and line: $(grep -i twice log)"
[ "$(code --cacert ca.crt --cert client.crt --key client.key $U/status)" = 401 ] ||
  fail "a key given twice on SIGHUP turned basic auth off"
[ "$(code --cacert ca.crt --cert client.crt --key client.key -u prometheus:battery-staple $U/status)" = 200 ] ||
  fail "a key given twice on SIGHUP changed what is served"
[ "$(code --cacert ca.crt --cert client.crt --key client.key -u prometheus:right-horse $U/status)" = 401 ] ||
  fail "a key given twice on SIGHUP: the last one's password was taken"
echo "ok   - a key given twice on SIGHUP is refused by key and line; auth stays on"

# A file cut before client_auth_type reads as TLS without client
# certificates: on SIGHUP that is refused, and a client without one is
# still turned away.
cat > web.yml <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  prometheus: '$H2'
YML
kill -HUP $HOST
for _ in $(seq 1 100); do grep -q "no longer be required" log && break; sleep 0.05; done
grep -q "^--web-config .*web.yml: tls_server_config: client certificates would no longer be required: TLS is not loosened by a reload.*the web config in force is kept" log ||
  fail "a reload dropping client certificates is not refused: $(tail -3 log)"
[ "$(code --cacert ca.crt -u prometheus:battery-staple $U/status)" = 000 ] ||
  fail "a reload turned client certificates off"
echo "ok   - a reload never loosens TLS: client certificates stay required"

# A file caught empty (rewritten in place) never turns TLS or auth off.
: > web.yml
kill -HUP $HOST
for _ in $(seq 1 100); do grep -q "TLS is not turned off by a reload" log && break; sleep 0.05; done
grep -q "TLS is not turned off by a reload" log || fail "an empty file on SIGHUP was taken"
[ "$(code --cacert ca.crt --cert client.crt --key client.key -u prometheus:battery-staple $U/status)" = 200 ] ||
  fail "an empty file on SIGHUP changed what is served"
[ "$(code http://127.0.0.1:$PORT/status)" = 000 ] || fail "plain HTTP answered after an empty reload"
echo "ok   - an empty file on SIGHUP keeps TLS and basic auth"
kill -TERM $HOST; wait $HOST || true; HOST=

# Bad files refuse to start (exit 2), each saying what is wrong.
bad() {  # bad DESCRIPTION WORDS YAML
  printf '%s' "$3" > bad.yml
  set +e; out=$(timeout -k 2 10 "$BIN" run "${F[@]}" --listen 127.0.0.1:0 --web-config "$T/bad.yml" 2>&1); rc=$?; set -e
  [ "$rc" = 2 ] || fail "$1: exit $rc: $out"
  grep -q -- "$2" <<<"$out" || fail "$1: does not say \"$2\": $out"
}
bad "misspelt key" "tls_server_config.key_fle: unknown key" $'tls_server_config:\n  cert_file: server.crt\n  key_fle: server.key\n'
bad "unknown TLS version" 'unknown TLS version "TLS9"' $'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS9\n'
bad "missing certificate" "cert_file $T/absent.crt: No such file" $'tls_server_config:\n  cert_file: absent.crt\n  key_file: server.key\n'
bad "missing key" "key_file $T/absent.key: No such file" $'tls_server_config:\n  cert_file: server.crt\n  key_file: absent.key\n'
bad "a key not the certificate's" "not the key of the certificate" $'tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n'
bad "not a bcrypt hash" "not a bcrypt hash" $'basic_auth_users:\n  prometheus: plain\n'
set +e; out=$(timeout -k 2 10 "$BIN" run "${F[@]}" --listen 127.0.0.1:0 --web-config "$T/none.yml" 2>&1); rc=$?; set -e
[ "$rc" = 2 ] && grep -q "No such file" <<<"$out" || fail "a missing web config: $rc $out"
echo "ok   - a bad web config refuses to start (exit 2) and says what is wrong"
# Refused before anything is made: no state directory, no lock.
set +e; out=$(timeout -k 2 10 "$BIN" run "${F[@]/$T\/st/$T/st-refused}" --listen 127.0.0.1:0 --web-config "$T/none.yml" 2>&1); rc=$?; set -e
[ "$rc" = 2 ] && [ ! -e "$T/st-refused" ] || fail "a refused web config made the state directory: $rc $(ls -la "$T/st-refused" 2>&1)"
echo "ok   - a refused web config leaves no state directory behind"

# Issue 39: fail closed. A directory at --web-config (a bind mount of a
# missing file makes one) served plain HTTP without auth; a FIFO there or
# at a TLS file hung the start, never listening, deaf to SIGTERM.
mkdir -p "$T/dir.yml"; mkfifo "$T/fifo.yml" "$T/fifo.key"
set +e; out=$(timeout -k 2 10 "$BIN" run "${F[@]}" --listen 127.0.0.1:0 --web-config "$T/dir.yml" 2>&1); rc=$?; set -e
[ "$rc" = 2 ] && grep -q "dir.yml: a directory, not a file" <<<"$out" || fail "a directory as web config: $rc $out"
set +e; out=$(timeout -k 2 10 "$BIN" run "${F[@]}" --listen 127.0.0.1:0 --web-config "$T/fifo.yml" 2>&1); rc=$?; set -e
[ "$rc" = 2 ] && grep -q "fifo.yml: not a regular file" <<<"$out" || fail "a FIFO as web config: $rc $out"
bad "a FIFO as key file" "key_file $T/fifo.key: not a regular file" $'tls_server_config:\n  cert_file: server.crt\n  key_file: fifo.key\n'
echo "ok   - a directory or FIFO as web config or TLS file refuses to start (exit 2)"

# rate_limit, as the toolkit reads it: `burst` requests at once, then one per
# `interval`, all clients together; past it 429.
printf 'rate_limit:\n  interval: 1m\n  burst: 2\n' > web.yml
start
codes=$(for _ in 1 2 3 4; do code http://127.0.0.1:$PORT/healthz; echo; done | tr '\n' ' ')
[ "$codes" = "200 200 429 429 " ] || fail "rate_limit (burst 2, one a minute): answered $codes"
kill -TERM $HOST; wait $HOST || true; HOST=
echo "ok   - rate_limit: past the burst, 429"
