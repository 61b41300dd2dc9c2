#!/usr/bin/env bash
# bench/verify-series.sh: N verify runs of the embedded reference target,
# each from fresh --sources (127.0.K.1-3), one after another, optionally
# beside HOGS CPU hogs (stress-ng --cpu HOGS); prints one line per run
# (verdict, each surface's family, whether decided, rejected_count, whether
# a follow-up was sent, seconds) and the tally. Extra arguments go to
# verify (for example --target URL --window 6s against `serve` of a mode).
#
#   bench/verify-series.sh [N] [HOGS] [verify flags...]   (defaults: 20 0)
#   OUT=dir bench/verify-series.sh ...                      (keep the run folders in dir)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20}; HOGS=${2:-0}; shift $(( $# > 2 ? 2 : $# ))
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
out=${OUT:-$tmp/out}
if [ "$HOGS" -gt 0 ]; then
  command -v stress-ng >/dev/null || { echo "stress-ng not found (apt-get install stress-ng)" >&2; exit 2; }
  stress-ng --cpu "$HOGS" --timeout 3600s >/dev/null 2>&1 &
  sleep 1
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $HOGS CPU hogs"
for i in $(seq "$N"); do
  k=$(( 100 + i ))
  start=$(date +%s.%N)
  "$tmp/ratecheck" verify --json --out "$out" --sources "127.0.$k.1,127.0.$k.2,127.0.$k.3" "$@" >"$tmp/v.json" 2>"$tmp/err" || true
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  python3 - "$tmp/v.json" "$tmp/err" "$secs" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
follow = "follow-up" if "follow-up on" in open(sys.argv[2]).read() else "-"
parts = [f"{s['surface']} {s['model']}{'' if s.get('model_decided') else '?'} rc={s['rejected_count']}" for s in v["surfaces"]]
print(f"{v['verdict']:12} {'; '.join(parts):70} {follow:9} {float(sys.argv[3]):.1f}s {v['run']}")
PY
done | tee "$tmp/lines"
echo "tally:"; awk '{print $1}' "$tmp/lines" | sort | uniq -c
echo "runs with a family undecided (?): $(grep -c '?' "$tmp/lines" || true); followed up: $(grep -c 'follow-up' "$tmp/lines" || true)"
