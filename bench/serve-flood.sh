#!/usr/bin/env bash
# bench/serve-flood.sh: flood the reference target (ratecheck serve --quiet)
# and a minimal per-address counting handler (bench/mincount) from one
# loopback address at the top rate the Vegeta CLI reaches, alternating
# ROUNDS times, and report each run's throughput and the server's peak RSS.
#
#   bench/serve-flood.sh [DURATION] [ROUNDS]     (defaults: 10s 3)
#
# Needs the Vegeta CLI: go install github.com/tsenart/vegeta/v12@v12.13.0
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
ROUNDS=${2:-3}
WORKERS=${WORKERS:-64}
VEGETA=${VEGETA:-$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")}
[ -x "$VEGETA" ] || { echo "vegeta CLI not found: go install github.com/tsenart/vegeta/v12@v12.13.0" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
go build -o "$tmp/mincount" ./bench/mincount

# flood NAME URL CMD...: start the server, attack it, print "NAME rate rss_mb".
flood() {
  local name=$1 url=$2; shift 2
  "$@" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "$url" && break; sleep 0.05; done
  echo "GET $url" | "$VEGETA" attack -rate=0 -max-workers="$WORKERS" -duration="$DUR" -keepalive=true >"$tmp/$name.bin"
  local rss; rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true
  "$VEGETA" report -type=json "$tmp/$name.bin" >"$tmp/$name.json"
  python3 - "$name" "$tmp/$name.json" "$rss" <<'PY'
import json, sys
name, path, rss = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = json.load(open(path))
codes = ", ".join(f"{k}:{v}" for k, v in sorted(r["status_codes"].items()))
answered = r["requests"] / ((r["duration"] + r["wait"]) / 1e9)
print(f"{name:9s} answered {answered:9.0f} req/s  requests {r['requests']:7d}  codes {codes}  peak RSS {rss/1024:.1f} MB")
PY
}

for i in $(seq "$ROUNDS"); do
  flood mincount http://127.0.0.1:18091/api/public/search?q=rate "$tmp/mincount" --addr 127.0.0.1:18091
  flood serve http://127.0.0.1:18092/api/public/search?q=rate "$tmp/ratecheck" serve --quiet --addr 127.0.0.1:18092
done
