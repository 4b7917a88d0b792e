#!/usr/bin/env bash
# Usage: bash scripts/watch-suite.sh [runs] [project]   (default: 5 runs of `parallel`)
#
# Runs one Vitest project again and again; when its output stops growing for
# 150 s, prints the process tree and every worker's state
# (scripts/inspect-worker.mjs) into watch-suite/summary.txt, then lets the run
# go on. For a hang that comes once in several runs: see test/README.md,
# "When a run hangs".
set -u
cd "$(dirname "$0")/.."
runs=${1:-5}
project=${2:-parallel}
out=watch-suite
mkdir -p "$out"
descendants() { for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done; }
for i in $(seq 1 "$runs"); do
  log="$out/run$i.log"
  CI=true npx vitest run --project "$project" > "$log" 2>&1 &
  vitest=$!
  last=0
  still=0
  while kill -0 "$vitest" 2>/dev/null; do
    sleep 10
    size=$(stat -c %s "$log")
    if [ "$size" = "$last" ]; then still=$((still + 10)); else still=0; last=$size; fi
    if [ "$still" -ge 150 ]; then
      echo "run $i: no output for 150 s at $(date)" >> "$out/summary.txt"
      ps -ef --forest | grep -v grep | grep -A3 vitest >> "$out/summary.txt"
      for pid in $(descendants "$vitest"); do
        grep -q node "/proc/$pid/comm" 2>/dev/null || continue
        timeout 20 node scripts/inspect-worker.mjs "$pid" >> "$out/summary.txt" 2>&1
        sleep 2
      done
      still=-600
    fi
  done
  wait "$vitest"
  echo "run $i: exit $? at $(date): $(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'Test Files|Duration' | tr '\n' ' ')" >> "$out/summary.txt"
done
