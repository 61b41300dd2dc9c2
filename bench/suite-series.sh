#!/usr/bin/env bash
# bench/suite-series.sh: the suite's time, as CONTRIBUTING.md reports it.
# N fresh clones of REV (default HEAD), one after another, each running
# `go test -count=1 ./...` once (nothing retried), optionally beside HOGS
# CPU hogs (stress-ng --cpu HOGS); prints one line per run (exit status,
# seconds from go test's start to its end, the tests that failed) and the
# range and median. A real-clock test that fails leaves its run folder
# under OUT/kept-K (RATECHECK_KEEP_FAILED), for `ratecheck analyze --json`.
# It refuses to start without what .ci/run installs (their tests would
# skip, and the figure would not be the suite's), or, with HOGS, without
# stress-ng.
#
#   bench/suite-series.sh [N] [HOGS] [REV]   (defaults: 10 0 HEAD)
#   OUT=dir bench/suite-series.sh ...        (keep the go test -json logs in dir)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10}; HOGS=${2:-0}; REV=$(git rev-parse --short "${3:-HEAD}")
missing=""
for p in nginx haproxy chromium xmllint node npm promtool; do
  command -v "$p" >/dev/null || missing="$missing $p"
done
if [ "$HOGS" -gt 0 ] && ! command -v stress-ng >/dev/null; then missing="$missing stress-ng"; fi
if [ -n "$missing" ]; then
  echo "missing:$missing (apt-get install nginx-light haproxy chromium libxml2-utils nodejs npm prometheus stress-ng)" >&2
  exit 2
fi
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
repo=$(pwd)
hogs=""
trap '[ -n "$hogs" ] && kill $hogs 2>/dev/null; true' EXIT
echo "$N fresh clones of $REV, $(nproc) cores, $HOGS CPU hogs, logs in $out"
for i in $(seq "$N"); do
  d=$(mktemp -d)
  git clone -q "$repo" "$d" && git -C "$d" checkout -q "$REV"
  (cd "$d" && go mod download)
  if [ "$HOGS" -gt 0 ]; then
    stress-ng --cpu "$HOGS" --timeout 3600s >/dev/null 2>&1 & hogs=$!
    sleep 2
    [ "$(pgrep -c stress-ng)" -gt "$HOGS" ] || { echo "stress-ng did not start its $HOGS workers" >&2; exit 2; }
  fi
  start=$(date +%s.%N)
  rc=0
  (cd "$d" && RATECHECK_KEEP_FAILED="$out/kept-$i" go test -count=1 -json ./... >"$out/run-$i.json" 2>"$out/run-$i.err") || rc=$?
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  if [ -n "$hogs" ]; then kill "$hogs"; wait "$hogs" 2>/dev/null || true; hogs=""; fi
  failed=$(grep '"Action":"fail"' "$out/run-$i.json" | grep -o '"Test":"[^"]*"' | cut -d'"' -f4 | tr '\n' ' ' || true)
  printf '%2d exit %d %6.1f s %s\n' "$i" "$rc" "$secs" "$failed" | tee -a "$out/lines"
  rm -rf "$d"
done
awk '{print $4}' "$out/lines" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%d runs: %.1f to %.1f s, median %.1f s\n", NR, v[1], v[NR], m}'
echo "green: $(awk '$3==0' "$out/lines" | wc -l) of $(wc -l <"$out/lines")"
