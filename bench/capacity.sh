#!/usr/bin/env bash
# bench/capacity.sh: the performance items of `ratecheck capacity`, measured
# (never asserted), with the load average beside them: the machine they ran
# on says as much as the figures.
#
#   bench/capacity.sh [STEP] [WINDOW]     (defaults: 5s 1s)
#
# 1. Against `serve --workers 50 --service 20ms` (capacity 2 500/s) with
#    p99<=100ms: the knee and how far it lies from 2 500/s, the steps used,
#    the seconds of load (warm-ups, steps and lengthenings), and the peak RSS
#    of the search (GNU time). WINDOW compresses the limits' window on both
#    sides (1s: 240 requests a second per address, so 21 addresses carry
#    10 000/s; 60s, the contract's, takes 5 000 addresses of 127.0.x.y).
# 2. The generator's own lateness (p99 of send time minus intended send
#    time) at a constant 1 000/s against a target without a pool, with
#    intended-time latency on: two steps of STEP (the step and its
#    re-measure), each step's lateness_p99_ms from --json. bench/pacing.sh
#    measures the same deviation for attack and the Vegeta CLI.
# LONG=1 adds a 5-minute search (--step 25s, 10 steps or so) for its peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
STEP=${1:-5s}; WINDOW=${2:-1s}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
up() { for _ in $(seq 200); do curl -s -o /dev/null "http://$1/" && return; sleep 0.05; done; }
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"

"$tmp/ratecheck" serve --quiet --addr 127.0.0.1:18094 --window "$WINDOW" --workers 50 --service 20ms >/dev/null 2>&1 &
up 127.0.0.1:18094
summary() { # FILE.json TIME-FILE LABEL
  python3 - "$@" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
load = sum(s["duration_ms"] for s in r["steps"]) / 1000
k = r["knee_rps"]
off = f"{100 * (k - 2500) / 2500:+.1f} % from 2 500/s" if k else "no knee"
print(f"{sys.argv[3]}: verdict {r['verdict']}, knee {k} (bracket {r['knee_low_rps']}..{r['knee_high_rps']}), {off}, "
      f"limited by {r['limited_by']}, {len(r['steps'])} steps, {load:.1f} s judged, peak RSS {rss:.0f} MB")
for s in r["steps"]:
    print(f"    {s['phase']:9s} {s['offered_rps']:8.1f}/s achieved {s['achieved_rps']:8.1f} p99 {s['quantile_ms']:7.1f} ms "
          f"(uncorrected {s['uncorrected_quantile_ms']:7.1f}) late p99 {s['lateness_p99_ms']:6.1f} ms n={s['requests']} {s['verdict']}")
PY
}
start=$(date +%s.%N)
/usr/bin/time -v "$tmp/ratecheck" capacity --target http://127.0.0.1:18094 --window "$WINDOW" --slo 'p99<=100ms' \
  --start-rate 500 --max-rate 10000 --step "$STEP" --json --report=false --out "$tmp/runs" >"$tmp/knee.json" 2>"$tmp/knee.time" || true
end=$(date +%s.%N)
summary "$tmp/knee.json" "$tmp/knee.time" "knee of 50 x 20ms"
if grep -q '"verdict": "client"' "$tmp/knee.json"; then # a loaded host: say so, and search again with a looser lateness bound
  start=$(date +%s.%N)
  /usr/bin/time -v "$tmp/ratecheck" capacity --target http://127.0.0.1:18094 --window "$WINDOW" --slo 'p99<=100ms' --max-lateness 60ms \
    --start-rate 500 --max-rate 10000 --step "$STEP" --json --report=false --out "$tmp/runs" >"$tmp/knee.json" 2>"$tmp/knee.time" || true
  end=$(date +%s.%N)
  summary "$tmp/knee.json" "$tmp/knee.time" "knee of 50 x 20ms, --max-lateness 60ms"
fi
echo "  wall time of the search: $(python3 -c "print(f'{$end - $start:.1f}')") s; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

"$tmp/ratecheck" serve --quiet --addr 127.0.0.1:18095 --window "$WINDOW" --rest-limit 100000000 >/dev/null 2>&1 &
up 127.0.0.1:18095
/usr/bin/time -v "$tmp/ratecheck" capacity --target http://127.0.0.1:18095 --window "$WINDOW" --slo 'p99<=100ms' \
  --start-rate 1000 --max-rate 1000 --step "$STEP" --sources 127.0.0.1 --through-limit --json --report=false --out "$tmp/runs" >"$tmp/late.json" 2>"$tmp/late.time" || true
summary "$tmp/late.json" "$tmp/late.time" "1 000/s from one address, no pool"
echo "  load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${LONG:-0}" = 1 ]; then
  /usr/bin/time -v "$tmp/ratecheck" capacity --target http://127.0.0.1:18094 --window "$WINDOW" --slo 'p99<=100ms' \
    --start-rate 500 --max-rate 10000 --step 25s --json --report=false --out "$tmp/runs" >"$tmp/long.json" 2>"$tmp/long.time" || true
  summary "$tmp/long.json" "$tmp/long.time" "5-minute search"
fi
