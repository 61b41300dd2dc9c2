#!/usr/bin/env bash
# bench/analyze-vs-report.sh: `ratecheck analyze` against `vegeta report` on
# the same N-result file, alternating ROUNDS times; prints each run's wall
# time and peak RSS, then the ratio of the medians.
#
#   bench/analyze-vs-report.sh [N] [ROUNDS]      (defaults: 1000000 3)
#   RESULTS=file bench/analyze-vs-report.sh      (reuse a results file)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}; ROUNDS=${2:-3}
VEGETA=${VEGETA:-$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")}
[ -x "$VEGETA" ] || { echo "vegeta CLI not found: go install github.com/tsenart/vegeta/v12@v12.13.0" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
file=${RESULTS:-$tmp/results.bin}
[ -n "${RESULTS:-}" ] || go run ./bench/genresults -n "$N" -o "$file"
echo "results file: $(du -h "$file" | cut -f1)"
measure() { # NAME CMD...: prints "NAME seconds maxrss_kb"
  local name=$1; shift
  /usr/bin/time -f "$name %e %M" "$@" >/dev/null 2>>"$tmp/times" || true
}
for _ in $(seq "$ROUNDS"); do
  measure analyze "$tmp/ratecheck" analyze --json "$file"
  measure report "$VEGETA" report "$file"
done
grep -E '^(analyze|report) ' "$tmp/times" | python3 -c '
import sys, statistics
t = {}
for line in sys.stdin:
    name, secs, kb = line.split()
    t.setdefault(name, []).append((float(secs), int(kb)))
    print(f"{name:8s} {float(secs):7.2f} s  peak RSS {int(kb)/1024:7.1f} MB")
a = statistics.median(s for s, _ in t["analyze"]); r = statistics.median(s for s, _ in t["report"])
print(f"median analyze {a:.2f} s, median vegeta report {r:.2f} s, ratio {a/r:.2f}")
'
