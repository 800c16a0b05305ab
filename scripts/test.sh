#!/usr/bin/env bash
# The whole test suite: vet, unit + integration tests (corpus tests skip
# cleanly without ../shared), and a short run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
go vet ./...
go build ./...
go test -count=1 ./...
FUZZTIME="${FUZZTIME:-8s}"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $target ($FUZZTIME)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" >/tmp/loci-fuzz.log 2>&1 || { cat /tmp/loci-fuzz.log; exit 1; }
  done
done
# The plain closing line counts for CI's log reader; go test's own lines are above.
echo "fuzz: all targets passed"
