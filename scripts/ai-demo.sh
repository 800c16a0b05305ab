#!/usr/bin/env bash
# Runs every AI operation (ai status, toc, ask, summarize, relate, tag,
# metadata, extract) on a copy of the demo vault against an in-process fake
# OpenAI-compatible server, through the loci CLI, printing the JSON.
# Offline: no provider, no key, nothing leaves the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./scripts/aidemo "$@"
