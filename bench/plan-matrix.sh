#!/usr/bin/env bash
# bench/plan-matrix.sh: the probe plan's confusion matrix. verify itself
# (its plan, its timeline, its follow-up and its analysis) run on a virtual
# clock against every limiter the fit weighs (and the premises' rivals),
# each made of the reference target's limiters, on the simulated quiet,
# busy and loaded hosts, each run judged by the command: per truth and host,
# how many runs passed, failed or were inconclusive, how many were right
# (the verdict, the decided family, rejected_count and the named cause, as
# TestPlanConfusion defines them), and which families the two surfaces
# decided. No network, no sleeping: the runs are simulated
# (internal/simrun).
#
#   bench/plan-matrix.sh [RUNS] [CELLS]   (default 1000 runs a cell; CELLS a
#                                          regular expression on "truth | host")
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000}
CELLS=${2:-}
go test -count=1 -timeout 6h -run '^TestPlanConfusion$' -v ./cmd/ratecheck -args -plan.runs="$RUNS" -plan.cells="$CELLS" |
  sed -n 's/^        //p; s/^    [a-z_]*_test.go:[0-9]*: //p'
