#!/usr/bin/env bash
# bench/plan-matrix.sh: the probe plan's confusion matrix. verify's plan,
# exactly as verify sends it, replayed against every limiter the fit weighs
# (and the premises' rivals) on the simulated quiet and busy hosts, each run
# judged by the analyzer: per truth and host, how many runs passed, failed or
# were inconclusive, how many were right (the verdict, the decided family,
# rejected_count and the named cause, as TestPlanConfusion defines them), and
# which families the two surfaces decided. No network, no sleeping: the
# runs are simulated on fake timestamps.
#
#   bench/plan-matrix.sh [RUNS]      (default 1000 runs a cell)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000}
go test -count=1 -timeout 2h -run '^TestPlanConfusion$' -v ./analyze -args -plan.runs="$RUNS" |
  sed -n 's/^        //p; s/^    plansim_test.go:[0-9]*: //p'
