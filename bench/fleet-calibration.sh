#!/usr/bin/env bash
# bench/fleet-calibration.sh: how often `ratecheck fleet` fails a fleet
# that jitters as it should (its false-alarm rate, 1 % by design).
#
#   bench/fleet-calibration.sh [RUNS] [FIRST_SEED]     (defaults: 20 1)
#
# Runs `ratecheck fleet --seed N --json` (embedded target, the defaults:
# 100 clients, full jitter) for RUNS consecutive seeds from FIRST_SEED,
# prints each run's verdict and per wave its collisions, re-collisions and
# busiest ε-bin against their bounds, then how many runs failed.
# STRATEGY=equal (or decorrelated, none) judges another strategy; none
# must fail every run.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-20}; FIRST=${2:-1}; STRATEGY=${STRATEGY:-full}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck
failed=0
for seed in $(seq "$FIRST" $((FIRST + RUNS - 1))); do
  code=0
  "$tmp/ratecheck" fleet --seed "$seed" --strategy "$STRATEGY" --json --out "$tmp/runs" >"$tmp/fleet.json" 2>"$tmp/fleet.err" || code=$?
  [ "$code" -ge 2 ] && { echo "seed $seed: exit $code"; cat "$tmp/fleet.err"; exit "$code"; }
  [ "$code" -eq 1 ] && failed=$((failed + 1))
  python3 - "$seed" "$tmp/fleet.json" <<'PY'
import json, sys
seed, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
waves = "  ".join("a%d %d(%d) re %d(%d) peak %d(%d)" % (w["attempt"], w["collisions"], w["bound"], w["recollided"],
                  w["recollision_bound"], w["peak_bin"], w["peak_bound"]) for w in r["waves"])
failed = [c["name"] for c in r["checks"] if c["verdict"] == "fail"]
print("seed %3s  %-4s  %s  KS p %.3g%s" % (seed, r["verdict"], waves, r["ks_p"], "  failed: " + ", ".join(failed) if failed else ""))
PY
done
echo "$failed of $RUNS runs failed (strategy $STRATEGY)"
