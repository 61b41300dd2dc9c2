#!/usr/bin/env bash
# bench/fresh-rotated.sh: whether verify's verdicts and models hold, run
# after run, against the documented limiter on a host whose both cores are
# busy, when every run starts fresh from addresses of its own.
#
#   bench/fresh-rotated.sh [RUNS] [WINDOW]     (defaults: 20 6s)
#
# Builds ratecheck, starts one `ratecheck serve --quiet` (the documented
# rolling limiter) with WINDOW and two busy loops (one per core), then runs
# RUNS `verify --json` back to back, run k from 127.0.k.1-3 (limit,
# isolation, contract address), so no run's limit address sent within a
# window before it and none waits. Per run it prints the verdict and each
# surface's model and model_decided; then `compare`s each run with the one
# before (exit 1: a flagged change, listed).
#
# Then it starts `serve --window 2×WINDOW --limiter admitted-only` (a
# rolling window that forgets refusals, twice as long as the one verify is
# told) and runs `verify --window WINDOW --checks limits` once, printing
# rejected-count per surface: a longer window explains the refusals that
# the documented window explains only by counting them, so it must not
# pass "refusals are explained only by counting refused requests".
#
# Prints a summary and exits 1 if any run failed, any compare flagged, or
# rejected-count passed against admitted-only; 2 on a usage or build error.
# KEEP=dir keeps the runs there.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-20}; WINDOW=${2:-6s}
case "$RUNS" in '' | *[!0-9]*) echo "RUNS must be a number from 1 to 199, got $RUNS" >&2; exit 2 ;; esac
[ "$RUNS" -ge 1 ] && [ "$RUNS" -le 199 ] || { echo "RUNS must be a number from 1 to 199, got $RUNS" >&2; exit 2; }
PORT=${PORT:-18101}
tmp=$(mktemp -d)
runs=${KEEP:-$tmp/runs}
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/ratecheck" ./cmd/ratecheck || exit 2
secs=$(python3 -c 'import sys, re; m = re.fullmatch(r"(\d+)s", sys.argv[1]); print(int(m.group(1)) if m else "")' "$WINDOW")
[ -n "$secs" ] || { echo "WINDOW must be whole seconds such as 6s, got $WINDOW" >&2; exit 2; }

serve() { # PORT ARGS...: start a target, wait until it answers
  local port=$1; shift
  "$tmp/ratecheck" serve --quiet --addr "127.0.0.1:$port" "$@" >/dev/null 2>&1 &
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && return; sleep 0.05; done
  echo "ratecheck serve on port $port did not start" >&2; exit 2
}
serve "$PORT" --window "$WINDOW"
sh -c 'while :; do :; done' & sh -c 'while :; do :; done' &

# verify K PORT OUT ARGS...: run k from 127.0.K.1-3; its JSON in OUT/verify.json
verify() {
  local k=$1 port=$2 out=$3; shift 3
  mkdir -p "$out"
  local code=0
  "$tmp/ratecheck" verify --json --target "http://127.0.0.1:$port" --window "$WINDOW" --out "$out" --report=false \
    --sources "127.0.$k.1,127.0.$k.2,127.0.$k.3" "$@" >"$out/verify.json" 2>"$out/verify.err" || code=$?
  if [ "$code" -eq 2 ] || [ "$code" -eq 3 ]; then cat "$out/verify.err" >&2; exit 2; fi
}

prev=""; flagged=0
for k in $(seq "$RUNS"); do
  verify "$k" "$PORT" "$runs/$k"
  run=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"])' "$runs/$k/verify.json")
  python3 - "$k" "$runs/$k/verify.json" <<'PY'
import json, sys
k, v = sys.argv[1], json.load(open(sys.argv[2]))
def model(s):
    if s["model_decided"]:
        return s["model"]
    return "%s, undecided%s" % (s["model"], "".join(" / " + a for a in s["model_alternatives"]))
cells = ["%s %s (%s)" % (s["surface"], s["verdict"], model(s)) for s in v["surfaces"]]
print("run %2s  %-12s %s" % (k, v["verdict"], ";  ".join(cells)))
PY
  if [ -n "$prev" ]; then
    code=0
    "$tmp/ratecheck" compare --json "$prev" "$run" >"$runs/$k/compare.json" 2>"$runs/$k/compare.err" || code=$?
    [ "$code" -eq 2 ] && { cat "$runs/$k/compare.err" >&2; exit 2; }
    if [ "$code" -eq 1 ]; then
      flagged=$((flagged + 1))
      python3 -c 'import json, sys; [print("        compare with run %s: %s" % (sys.argv[2], r)) for r in json.load(open(sys.argv[1]))["regressions"]]' "$runs/$k/compare.json" "$((k - 1))"
    fi
  fi
  prev=$run
done

# admitted-only at twice the window, verified at WINDOW
PORT2=$((PORT + 1))
serve "$PORT2" --window "$((2 * secs))s" --limiter admitted-only
verify 200 "$PORT2" "$runs/admitted-only" --checks limits
python3 - "$RUNS" "$flagged" "$runs" <<'PY'
import collections, json, sys
n, flagged, runs = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
verdicts, models, undecided = collections.Counter(), collections.Counter(), 0
for k in range(1, n + 1):
    v = json.load(open("%s/%d/verify.json" % (runs, k)))
    verdicts[v["verdict"]] += 1
    for s in v["surfaces"]:
        models["%s %s" % (s["surface"], s["model"])] += 1
        undecided += not s["model_decided"]
print()
print("%d runs: %s" % (n, ", ".join("%d %s" % (c, x) for x, c in sorted(verdicts.items()))))
print("models named: %s" % ", ".join("%s ×%d" % (m, c) for m, c in sorted(models.items())))
print("undecided models: %d of %d" % (undecided, 2 * n))
print("compare flagged: %d of %d consecutive pairs" % (flagged, n - 1))
print()
v = json.load(open(runs + "/admitted-only/verify.json"))
bad = False
print("admitted-only at twice the window, verified at the window: verdict %s" % v["verdict"])
for s in v["surfaces"]:
    for c in s["checks"]:
        if c["name"] == "rejected-count":
            print("  %s rejected-count %s: %s" % (s["surface"], c["verdict"], c["detail"]))
            bad |= c["verdict"] == "pass"
status = 1 if verdicts["fail"] or flagged or bad else 0
print("exit %d" % status)
sys.exit(status)
PY
