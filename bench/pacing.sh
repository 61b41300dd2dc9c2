#!/usr/bin/env bash
# bench/pacing.sh: pacing fidelity and top rate of `ratecheck attack` against
# the Vegeta CLI, on the same loopback target (ratecheck serve --quiet with a
# limit high enough that nothing is refused), in the same run.
#
#   bench/pacing.sh [RATE] [DURATION] [ROUNDS]     (defaults: 1000 5s 3)
#
# For each tool and round it prints the deviation of every send time from its
# schedule (p50, p99, max) at RATE, then the top rate each reaches unpaced.
# RATE is a whole number of requests per second.
#
# Both attacks go past ratecheck's --max-rate ceiling (1000 requests in any
# one second: a constant 1000/s puts 1001 in a closed second), so the script
# raises it on purpose, to what each attack sends, against its own loopback
# target only. The top-rate runs saturate that target on purpose, so they
# also turn off the failure stop (--abort-at 0), which would otherwise end
# them once most results are timeouts; their transport errors are counted
# apart from the answers.
#
# The top-rate runs leave thousands of loopback connections in TIME_WAIT
# (17 000 after three rounds), which hold the local ports for a minute: a
# test suite or a verify run started meanwhile fails to bind or connect
# ("cannot assign requested address"). The script waits for them to drain
# before it exits (NO_DRAIN=1 skips the wait); run nothing else beside it.
#
# Needs the Vegeta CLI: go install github.com/tsenart/vegeta/v12@v12.13.0
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-1000}; DUR=${2:-5s}; ROUNDS=${3:-3}
TOP=50000 # the "unpaced" rate of the top-rate runs
VEGETA=${VEGETA:-$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")}
[ -x "$VEGETA" ] || { echo "vegeta CLI not found: go install github.com/tsenart/vegeta/v12@v12.13.0" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
"$tmp/ratecheck" serve --quiet --addr 127.0.0.1:18093 --rest-limit 100000000 >/dev/null 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18093/ && break; sleep 0.05; done
URL=http://127.0.0.1:18093/api/public/manifests/developers
cat >"$tmp/paced.yaml" <<YAML
policy: {surface: rest}
sources: [127.0.0.1]
streams:
  - name: paced
    surface: rest
    requests: [{path: /api/public/manifests/developers}]
    pacer: {type: constant, rate: $RATE/s, duration: $DUR}
YAML

deviation() { # FILE: schedule deviation of a results file paced at RATE
  "$VEGETA" encode --to csv "$1" | python3 -c '
import sys, csv
rate = float(sys.argv[1])
rows = sorted((int(r[8]), int(r[0])) for r in csv.reader(sys.stdin))
t0 = rows[0][1]
dev = sorted(abs(ts - t0 - seq * 1e9 / rate) / 1e6 for seq, ts in rows)
n = len(dev)
print(f"requests {n:6d}  deviation from schedule p50 {dev[n//2]:.3f} ms  p99 {dev[int(n*0.99)]:.3f} ms  max {dev[-1]:.1f} ms")
' "$RATE"
}

toprate() { # FILE: requests answered per second (transport errors are not answers)
  "$VEGETA" report -type=json "$1" | python3 -c '
import sys, json
r = json.load(sys.stdin)
n = r["requests"]
errors = r["status_codes"].get("0", 0)
rate = (n - errors) / ((r["duration"] + r["wait"]) / 1e9)
print(f"requests {n:6d}  answered {rate:8.0f} req/s  transport errors {errors}")'
}

sed "s#rate: $RATE/s#rate: $TOP/s#" "$tmp/paced.yaml" >"$tmp/top.yaml"
for i in $(seq "$ROUNDS"); do
  echo "round $i"
  "$tmp/ratecheck" attack --profile "$tmp/paced.yaml" --max-rate "$((RATE + 1))" --target http://127.0.0.1:18093 --out "$tmp/runs" >/dev/null
  run=$(ls -d "$tmp"/runs/* | tail -1)
  printf '  ratecheck  '; deviation "$run/results.bin"; rm -rf "$tmp/runs"
  echo "GET $URL" | "$VEGETA" attack -rate="$RATE" -duration="$DUR" >"$tmp/v.bin"
  printf '  vegeta     '; deviation "$tmp/v.bin"
  "$tmp/ratecheck" attack --profile "$tmp/top.yaml" --max-rate "$((TOP + 1))" --abort-at 0 --target http://127.0.0.1:18093 --out "$tmp/runs" >/dev/null
  run=$(ls -d "$tmp"/runs/* | tail -1)
  printf '  ratecheck top rate  '; toprate "$run/results.bin"; rm -rf "$tmp/runs"
  echo "GET $URL" | "$VEGETA" attack -rate="$TOP" -duration="$DUR" >"$tmp/v.bin"
  printf '  vegeta    top rate  '; toprate "$tmp/v.bin"
done

# Let the top-rate runs' TIME_WAIT connections drain (about a minute) so
# that what runs next has its local ports.
if [ -z "${NO_DRAIN:-}" ]; then
  n=$(ss -tan state time-wait 2>/dev/null | wc -l)
  if [ "$n" -gt 1000 ]; then
    echo "waiting for $n loopback connections in TIME_WAIT to drain (NO_DRAIN=1 skips this)" >&2
    for _ in $(seq 90); do
      [ "$(ss -tan state time-wait 2>/dev/null | wc -l)" -le 1000 ] && break
      sleep 1
    done
  fi
fi
