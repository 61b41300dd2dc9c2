#!/bin/sh
# history-series.sh OUT [DELAY_FROM] makes a series of 30 archived verify
# runs under OUT, labelled v1 … v30, each against a fresh embedded
# target; from run DELAY_FROM on (default: never) the target delays every
# answer by 20–40 ms. Then `ratecheck history OUT` should name the run
# where REST and MCP p99 rose (see docs/history.md). About 7 s a run on
# an idle machine. RATECHECK names the command (default: go run
# ./cmd/ratecheck, from the repository's root).
set -eu
out=${1:?usage: history-series.sh OUT [DELAY_FROM]}
from=${2:-0}
rc=${RATECHECK:-go run ./cmd/ratecheck}
mkdir -p "$out"
for n in $(seq 1 30); do
	faults=
	if [ "$from" -gt 0 ] && [ "$n" -ge "$from" ]; then
		faults=--faults=delay=20ms-40ms
	fi
	# shellcheck disable=SC2086 # $rc and $faults are words
	$rc verify --label "v$n" --out "$out" --report=false $faults >/dev/null 2>&1 || echo "run $n: exit $?" >&2
	echo "run $n done $(cut -d' ' -f1 /proc/loadavg 2>/dev/null || true)"
done
