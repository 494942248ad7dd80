#!/bin/bash
# Issue 32 section 1's figures, one session:
#   B=target/release/planwave BENCH=path/to/bare_ractor-bench-binary docs/bench/section1.sh
# B is a release build of `planwave`; BENCH is `cargo bench -p planwave-loadtest --bench
# bare_ractor --no-run`'s binary (the bare ractor baseline and the engine, interleaved).
# See docs/benchmarks.md, "Engine: the targets of record". The bench prints the engine end to end, to its
# last task settled, and with a minimal model (a fixed short answer); CALLGRIND=1 adds the
# instruction counts of one small round of each side (independent of the machine's load).
set -u
: "${B:?B=planwave release binary}" "${BENCH:?BENCH=bare_ractor bench binary}"
la(){ cut -d' ' -f1-3 /proc/loadavg; }
j(){ python3 -c "import json,sys;d=json.load(sys.stdin);r=d['runs'][0] if 'runs' in d else d;print(' '.join('%s=%s'%(k,r[k]) for k in sys.argv[1:]))" "$@"; }
echo "== start $(date -u +%H:%M:%S) load $(la)"
echo "== zero latency against the bare ractor baseline, 5 interleaved rounds"
ROUNDS=5 "$BENCH"
if [ -n "${CALLGRIND:-}" ]; then
  for side in bare engine minimal; do
    ONLY=$side WIDE=2000 CHAIN=1000 ROUNDS=1 valgrind --tool=callgrind \
      --callgrind-out-file="callgrind.section1.$side" "$BENCH" 2>&1 | grep -E "refs|^median"
  done
fi
echo "== 500-task random DAG, lognormal 100 ms sigma 1, 3 runs (load $(la))"
for r in 1 2 3; do $B loadtest --shape random --tasks 500 --latency lognormal:100:1 --json 2>/dev/null | j makespan_ms critical_path_bound_ms critical_path_ratio; done
echo "== 10,000 wide, lognormal 1 s sigma 0.5, 3 runs (load $(la))"
for r in 1 2 3; do $B loadtest --shape wide --tasks 10000 --latency lognormal:1000:0.5 --json 2>/dev/null | j makespan_ms critical_path_bound_ms critical_path_ratio; done
echo "== memory, 100,000 wide in flight, fixed 2 s, 2 runs (load $(la))"
for r in 1 2; do $B loadtest --shape wide --tasks 100000 --latency fixed:2000 --json 2>/dev/null | j max_in_flight peak_rss_bytes baseline_rss_bytes rss_per_in_flight_bytes; done
echo "== dispatch with 10,000 in flight, 5 runs (load $(la))"
for r in 1 2 3 4 5; do $B loadtest --shape layered --tasks 20000 --width 10000 --fan-in 2 --latency lognormal:2000:0.5 --json 2>/dev/null | j max_in_flight dispatch_ms; done
echo "== end $(date -u +%H:%M:%S) load $(la)"
