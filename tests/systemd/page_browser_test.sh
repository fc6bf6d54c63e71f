#!/usr/bin/env bash
# The page at / in a real browser (Debian's headless Chromium), served by
# `mesh-host run` against a real systemd: on a healthy host, then on one
# whose daemon refused its new config (ADR 184's case: jail.service dies
# 0.2 s after its restart). What a person sees is checked on the DOM the
# browser built — the verdict, the failing unit named at the top and
# first in the table — and no Content-Security-Policy violation is logged,
# so the page's one style really applies. Both screenshots are kept under
# the test's outputs (docs/images/ holds a copy of each).
. "$(dirname "$0")/box_suite.sh" page /tmp
OUTS=${TEST_UNDECLARED_OUTPUTS_DIR:-$T/outputs}
mkdir -p "$T/root/etc" "$T/etc" "$OUTS"
CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || { echo "FAIL: chromium is not installed (tools/test installs it)"; exit 1; }

decl() { printf '{"machine":"edge-1","generation":%s,"resources":[%s]}' "$1" "$2"; }
conf() { printf '{"id":"jail.conf","kind":"file","path":"/etc/jail.conf","content":"%s"}' "$1"; }
JAIL=$'[Service]\nExecStart=/bin/sh -c \'grep -q good '"$T"$'/root/etc/jail.conf || { sleep 0.221; exit 1; }; exec sleep infinity\'\n'
svc() {
  printf '{"id":"jail","kind":"service","unit":"jail.service","state":"running","restart_on":["jail.conf"],"unit_text":%s}' \
    "$(printf '%s' "$JAIL" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')"
}
files() { local i; for i in 1 2 3; do printf ',{"id":"motd-%s","kind":"file","path":"/etc/motd-%s","content":"hello\\n"}' "$i" "$i"; done; }
publish() { decl "$1" "$(conf "$2"),$(svc)$(files)" > "$T/etc/.d.json"; mv "$T/etc/.d.json" "$T/etc/declaration.json"; }

publish 1 good
"$BIN" run --declaration "$T/etc/declaration.json" --root "$T/root" --state-dir "$T/state" \
  --artifacts "$T/art" --unit-dir "$UNITS" --machine edge-1 --settle 1s --interval 1h \
  --listen 127.0.0.1:0 2> "$T/run.log" &
PIDS+=($!)
until_true 10 'grep -q "listening on" "$T/run.log"'
URL=http://$(grep -o 'listening on 127.0.0.1:[0-9]*' "$T/run.log" | head -1 | cut -d' ' -f3)
code() { curl -s -o /dev/null -w '%{http_code}' "$URL$1"; }

# browse NAME: the DOM Chromium built from / into $T/NAME.html, its log
# into $T/NAME.log, a screenshot into $OUTS/NAME.png. The box's bus is not
# the browser's: it is given none.
browse() {
  local flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$T/chromium" --no-first-run
               --disable-background-networking --disable-component-update --disable-sync
               --disable-dev-shm-usage --hide-scrollbars --window-size=1100,760)
  env -u DBUS_SYSTEM_BUS_ADDRESS -u DBUS_SESSION_BUS_ADDRESS timeout 60 "$CHROMIUM" "${flags[@]}" \
    --enable-logging=stderr --v=0 --dump-dom "$URL/" > "$T/$1.html" 2> "$T/$1.log" || true
  env -u DBUS_SYSTEM_BUS_ADDRESS -u DBUS_SESSION_BUS_ADDRESS timeout 60 "$CHROMIUM" "${flags[@]}" \
    --screenshot="$OUTS/$1.png" "$URL/" >/dev/null 2>&1 || true
}
# seen NAME PYTHON: a check on what the browser built, read with the
# standard library's HTML parser: `verdict` (the header's words), `wrong`
# (the items of "What is wrong"), `rows` (each table row's cells).
seen() {
  python3 - "$T/$1.html" "$2" <<'PY'
import html.parser, sys
class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.verdict = ""; self.wrong = []; self.rows = []
        self.section = None; self.cell = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section": self.section = a.get("id")
        if tag == "span" and a.get("id") == "verdict": self.cell = "verdict"
        if tag == "li" and self.section == "wrong": self.wrong.append(""); self.cell = "li"
        if tag == "tr" and self.section == "resources": self.rows.append([])
        if tag in ("td", "th") and self.section == "resources": self.rows[-1].append(""); self.cell = "td"
    def handle_endtag(self, tag):
        if tag in ("span", "li", "td", "th"): self.cell = None
    def handle_data(self, data):
        if self.cell == "verdict": self.verdict += data
        elif self.cell == "li": self.wrong[-1] += data
        elif self.cell == "td": self.rows[-1][-1] += data
p = Page(); p.feed(open(sys.argv[1], encoding="utf-8").read())
verdict, wrong, rows = p.verdict, p.wrong, [r for r in p.rows[1:] if r]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}
no_csp_violation() { ! grep -qi "content security policy" "$T/$1.log"; }

check "healthy: /healthz 200" 'until_true 15 "[ \$(code /healthz) = 200 ]"'
browse healthy
check "healthy: the browser built the page" 'grep -q "</html>" "$T/healthy.html"'
check "healthy: the verdict reads HEALTHY" 'seen healthy "verdict == \"HEALTHY\" and not wrong"'
check "healthy: every resource is a row, the unit up" \
  'seen healthy "len(rows) == 5 and any(r[1] == \"jail\" and r[0] == \"up\" and \"active (running)\" in r[4] for r in rows)"'
check "healthy: no CSP violation logged" 'no_csp_violation healthy'
check "healthy: a screenshot" '[ -s "$OUTS/healthy.png" ]'

publish 2 bad
check "refused config caught: /healthz 503" 'until_true 20 "[ \$(code /healthz) = 503 ]"'
check "the apply said failed" 'until_true 5 "grep -Eq \"^failed jail \\(service\\): jail.service failed \\(Result=exit-code\\)\" \"$T/run.log\""'
browse failing
check "failing: the verdict reads NOT HEALTHY" 'seen failing "verdict == \"NOT HEALTHY\""'
check "failing: the first thing wrong names jail.service" \
  'seen failing "wrong and \"jail.service failed (Result=exit-code)\" in wrong[0]"'
check "failing: the first row is the failing unit" \
  'seen failing "rows[0][0] == \"failing\" and rows[0][1] == \"jail\" and \"after restart\" in rows[0][6]"'
check "failing: the fine resources come after it" 'seen failing "all(r[0] != \"failing\" for r in rows[1:])"'
check "failing: no CSP violation logged" 'no_csp_violation failing'
check "failing: a screenshot" '[ -s "$OUTS/failing.png" ]'
check "the page loads nothing from elsewhere" '! grep -Eq "(src=|https?:|<link|<script)" "$T/failing.html"'

# The check above can fail: a page whose style the policy does not name is
# logged as a violation by this browser.
python3 - "$T/bad.port" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'sha256-AAAA'")
        self.send_header("Content-Type", "text/html"); self.end_headers()
        self.wfile.write(b"<!DOCTYPE html><html><head><style>body{color:red}</style></head><body>x</body></html>")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1])); s.serve_forever()
PY
PIDS+=($!)
until_true 5 '[ -s "$T/bad.port" ]'
URL=http://127.0.0.1:$(cat "$T/bad.port") browse control
check "control: a style outside the policy is logged as a violation" '! no_csp_violation control'

echo "page browser: $fails failed (screenshots in $OUTS)"
[ "$fails" = 0 ]
