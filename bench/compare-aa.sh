#!/usr/bin/env bash
# bench/compare-aa.sh: how often `compare` flags two runs of one build
# against one target (an A/A pair), where nothing regressed.
#
#   bench/compare-aa.sh [PAIRS] [WINDOW]     (defaults: 20 6s)
#
# Starts `ratecheck serve --quiet` on a loopback port with WINDOW, then per
# pair runs `verify` twice against it and `compare`s the two runs. Each
# verify waits one WINDOW after the one before, so that every address
# starts with its whole budget. Prints per pair each surface's p99s and the
# interval of their ratio, and compare's exit code (1: flagged); then how
# many pairs were flagged. KEEP=dir keeps the runs there. FAULTS=spec gives
# the second run of every pair a target with those faults instead (e.g.
# FAULTS=delay=20ms-40ms: a real regression, which every pair must flag).
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-20}; WINDOW=${2:-6s}
PORT=${PORT:-18097}
tmp=$(mktemp -d)
runs=${KEEP:-$tmp/runs}
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck

serve() { # PORT [FAULTS]: start a target, wait until it answers
  "$tmp/ratecheck" serve --quiet --addr "127.0.0.1:$1" --window "$WINDOW" ${2:+--faults "$2"} >/dev/null 2>&1 &
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return; sleep 0.05; done
  echo "ratecheck serve on port $1 did not start" >&2; exit 2
}
serve "$PORT"
PORT_B=$PORT
if [ -n "${FAULTS:-}" ]; then PORT_B=$((PORT + 1)); serve "$PORT_B" "$FAULTS"; fi

verify() { # PORT OUT: one verify run, its folder on stdout
  mkdir -p "$2"
  "$tmp/ratecheck" verify --target "http://127.0.0.1:$1" --window "$WINDOW" --out "$2" --report=false >"$tmp/verify.txt" 2>&1 ||
    echo "  (verify exited $?: $(grep -m1 -i 'verdict' "$tmp/verify.txt"))" >&2
  sleep "$WINDOW"
  ls -d "$2"/*-verify
}

flagged=0
for i in $(seq "$PAIRS"); do
  a=$(verify "$PORT" "$runs/$i-a")
  b=$(verify "$PORT_B" "$runs/$i-b")
  code=0
  "$tmp/ratecheck" compare --json "$a" "$b" >"$tmp/compare.json" 2>"$tmp/compare.err" || code=$?
  [ "$code" -eq 2 ] && { cat "$tmp/compare.err" >&2; exit 2; }
  [ "$code" -eq 1 ] && flagged=$((flagged + 1))
  python3 - "$i" "$code" "$tmp/compare.json" <<'PY'
import json, sys
pair, code, path = sys.argv[1], sys.argv[2], sys.argv[3]
c = json.load(open(path))
cells = []
for p in c["p99"]:
    lo, hi = p.get("ratio_low"), p.get("ratio_high")
    band = "" if lo is None else " [%.2f, %.2f]" % (lo, hi)
    cells.append("%s p99 %.2f -> %.2f ms, ratio %.2f%s" % (p["surface"], p["baseline_ms"], p["run_ms"], p["ratio"], band))
print("pair %2s  exit %s  %s" % (pair, code, ";  ".join(cells)))
for r in c["regressions"]:
    print("         regression: " + r)
PY
done
echo "$flagged of $PAIRS pairs flagged"
