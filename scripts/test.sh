#!/usr/bin/env bash
# The whole test suite: vet, unit + integration tests (corpus tests skip
# cleanly without ../shared), the MCP interop suite and the real-browser
# test of the web UI (each skips itself, saying why, when Node, npm or
# chromium cannot be had), and a short run of every fuzz target.
#
# Fuzz exploration is random (Go's fuzzer takes no seed), so CI (CI=true)
# does not explore: `go test ./...` above already replays every target's
# seeds and every kept crasher under testdata/fuzz, which is deterministic.
# On a developer machine the exploration runs, and a finding becomes a fix
# plus a kept input before it lands. LOCI_FUZZ=1 forces it, LOCI_FUZZ=0
# skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
go vet ./...
go build ./...
go test -count=1 ./...
# MCP interop: the official conformance suite and the MCP Inspector against
# loci (scripts/interop.sh). Needs Node 22 from the npm registry on the first
# run (cached in ~/.cache/loci-interop); skipped with a message when npm is
# absent or unreachable. 95-270 s on 2 shared cores, depending on load.
bash scripts/interop.sh --if-online

# The web UI in a real browser (docs/web.md, "Browser test"): Debian's
# chromium (installed when root), Node 22 and playwright-core from npm, on a
# copy of obsidian-help/en; about 1-2 minutes. It skips itself, with the
# reason, when the corpus, chromium or npm is not available.
bash scripts/browser-test.sh

fuzz="${LOCI_FUZZ:-}"
if [ -z "$fuzz" ]; then
  if [ "${CI:-}" = "true" ]; then fuzz=0; else fuzz=1; fi
fi
if [ "$fuzz" != "1" ]; then
  echo "fuzz: exploration skipped (CI=${CI:-} LOCI_FUZZ=${LOCI_FUZZ:-}); seeds and kept inputs ran with go test"
  exit 0
fi
# A fixed number of executions per target (not a duration): the same work on
# any machine, and no end-of-time race in the fuzzing coordinator (a timed
# run occasionally ends with a spurious "context deadline exceeded").
FUZZTIME_SET="${FUZZTIME:-}"
FUZZTIME="${FUZZTIME:-100000x}"
# Targets whose every execution is heavy (building and checking a whole
# model) run fewer executions, unless FUZZTIME is given.
declare -A HEAVY=([FuzzONNXModel]=10000x)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    n="$FUZZTIME"
    if [ -z "${FUZZTIME_SET:-}" ] && [ -n "${HEAVY[$target]:-}" ]; then n="${HEAVY[$target]}"; fi
    echo "fuzz $pkg $target ($n)"
    if ! go test -run='^$' -fuzz="^${target}\$" -fuzztime="$n" "$pkg" >"$log" 2>&1; then
      # A real finding names a failing input under testdata/fuzz; anything
      # else (the coordinator's deadline race) is retried once.
      if grep -q "testdata/fuzz/" "$log" || ! grep -q "context deadline exceeded" "$log"; then
        cat "$log"; exit 1
      fi
      echo "  retrying $target after a fuzzing-engine deadline race"
      go test -run='^$' -fuzz="^${target}\$" -fuzztime="$n" "$pkg" >"$log" 2>&1 || { cat "$log"; exit 1; }
    fi
  done
done
# The plain closing line counts for CI's log reader; go test's own lines are above.
echo "fuzz: all targets passed"
