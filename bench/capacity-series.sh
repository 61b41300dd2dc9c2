#!/usr/bin/env bash
# bench/capacity-series.sh OUT: ten labelled capacity runs (v1 … v10) into
# OUT against `serve --workers 12 --service 8ms` (capacity 12 / 8 ms =
# 1 500/s) for v1–v5 and `--workers 8` (1 000/s) for v6–v10, the knee's
# fall a release would bring; then `ratecheck history --fail-on regression`
# of OUT (which should name the fall at v6, for the worse, and exit 1) and
# `ratecheck compare` of v1 and v10 (which should exit 1). Prints each
# run's knee and both exit codes; the run folders stay in OUT. STEP sets
# the judged length of a step (default 2s); about half a minute a run.
# Every run is against one target (one address, as a release's API has)
# and sends from addresses of its own (127.N.0.1-100): back-to-back runs
# from the same addresses would meet their own TIME_WAIT sockets, and the
# generator, slowed, would be the limit (client) of the later runs.
#
#   bench/capacity-series.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/capacity-series.sh OUT}
STEP=${STEP:-2s}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
up() { for _ in $(seq 200); do curl -s -o /dev/null "http://$1/" && return; sleep 0.05; done; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
port=18095
for n in $(seq 1 10); do
  workers=12
  [ "$n" -ge 6 ] && workers=8
  "$tmp/ratecheck" serve --quiet --addr "127.0.0.1:$port" --window 1s --workers "$workers" --service 8ms >/dev/null 2>&1 &
  pid=$!
  up "127.0.0.1:$port"
  code=0
  "$tmp/ratecheck" capacity --target "http://127.0.0.1:$port" --window 1s --slo 'p99<=100ms' --start-rate 200 --max-rate 4000 \
    --sources "127.$((10 + n)).0.1-127.$((10 + n)).0.100" --step "$STEP" --label "v$n" --out "$out" --json --report=false >"$tmp/r.json" 2>"$tmp/err" || code=$?
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$tmp/r.json" "$n" "$workers" "$code" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"v{sys.argv[2]}: {sys.argv[3]} workers ({int(sys.argv[3]) * 125}/s), exit {sys.argv[4]}, {r['verdict']}, knee {r['knee_rps']} [{r['knee_low_rps']}, {r['knee_high_rps']}]")
PY
done
code=0
"$tmp/ratecheck" history --fail-on regression "$out" || code=$?
echo "history --fail-on regression: exit $code"
runs=$(ls -d "$out"/*-capacity | sort)
first=$(echo "$runs" | head -1); last=$(echo "$runs" | tail -1)
code=0
"$tmp/ratecheck" compare "$first" "$last" || code=$?
echo "compare v1 v10: exit $code"
