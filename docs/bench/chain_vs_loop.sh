#!/bin/bash
# Zero-latency throughput of a chain against the asyncio dataflow loop, interleaved rounds:
#   B=path/to/planwave [ROUNDS=20] [N=5000] [SHAPE=chain] [IDLE=0] docs/bench/chain_vs_loop.sh
# Each round measures the loop, then planwave, and prints both rates and their ratio; the end
# prints the median ratio and how many rounds were at least the loop's.
#
# IDLE=0 (warm): each measured run follows one unmeasured run of the same program.
# IDLE=s (cold): each measured run follows s seconds of idle instead.
# Why both: this VM (Firecracker) reports free guest memory to its host in 8 MB blocks
# (`page_reporting.page_reporting_order=11` on the kernel command line), and a page the
# guest hands out again from a reported block is backed afresh by the host: zeroing one
# 2 MiB huge page then took ~10 ms instead of ~0.3 ms. Memory freed in the last second or
# two is not reported yet, which is what the unmeasured run leaves behind. The loop keeps
# nothing per task; planwave keeps every section and writes the report, so it touches ~10 MB
# of fresh memory per run and only it is slowed by cold pages. See docs/benchmarks.md.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
: "${B:?B=planwave binary}"
ROUNDS=${ROUNDS:-20}; N=${N:-5000}; SHAPE=${SHAPE:-chain}; IDLE=${IDLE:-0}
PY=$ROOT/crates/loadtest/benches/asyncio_dataflow.py
loop() { python3 "$PY" "$SHAPE" "$N" | python3 -c 'import json,sys;print(round(json.load(sys.stdin)["tasks_per_sec"]))'; }
engine() { "$B" loadtest --shape "$SHAPE" --tasks "$N" --latency fixed:0 2>&1 | awk '/tasks\/s \(end to end\)/{print $NF}'; }
before() { if [ "$IDLE" = 0 ]; then "$@" >/dev/null; else sleep "$IDLE"; fi; }
echo "== $SHAPE $N, $ROUNDS rounds, $([ "$IDLE" = 0 ] && echo warm || echo "cold (${IDLE} s idle)"), $(date -u +%H:%M:%S)"
ratios=()
for r in $(seq "$ROUNDS"); do
  before loop; L=$(loop)
  before engine; E=$(engine)
  q=$(python3 -c "print(f'{$E/$L:.2f}')")
  ratios+=("$q")
  echo "round $r loop $L planwave $E ratio $q"
done
printf '%s\n' "${ratios[@]}" | python3 -c '
import statistics, sys
v = [float(x) for x in sys.stdin]
print(f"median {statistics.median(v):.2f}x, min {min(v):.2f}x, max {max(v):.2f}x, at least the loop in {sum(x >= 1 for x in v)} of {len(v)}")'
