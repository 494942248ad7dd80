#!/bin/bash
# Two builds compared in one sitting, alternating (docs/benchmarks.md, "Engine: the targets
# of record"): O=old/planwave N=new/planwave BO=old/bare_ractor-* BN=new/bare_ractor-* docs/bench/ab.sh
set -u
: "${O:?O=old planwave release binary}" "${N:?N=new one}" "${BO:?BO=old bare_ractor bench binary}" "${BN:?BN=new one}"
la(){ cut -d' ' -f1-3 /proc/loadavg; }
j(){ python3 -c "import json,sys;d=json.load(sys.stdin);r=d['runs'][0] if 'runs' in d else d;print(' '.join('%s=%s'%(k,r[k]) for k in sys.argv[1:]))" "$@"; }
echo "== start $(date -u +%H:%M:%S) load $(la)"
echo "== zero latency, engine and minimal sides, old/new interleaved, 3 pairs of ROUNDS=3"
for r in 1 2 3; do
  for side in old new; do
    b=$BO; [ $side = new ] && b=$BN
    echo "-- $side round $r (load $(la))"
    ONLY=engine ROUNDS=3 $b 2>&1 | grep -E "^median|engine" | tail -4
    ONLY=minimal ROUNDS=3 $b 2>&1 | grep -E "^median|minimal" | tail -4
  done
done
echo "== 500-task random DAG, lognormal 100 ms sigma 1 (load $(la))"
for r in 1 2 3; do for side in old new; do b=$O; [ $side = new ] && b=$N; echo -n "$side "; $b loadtest --shape random --tasks 500 --latency lognormal:100:1 --json 2>/dev/null | j makespan_ms critical_path_bound_ms critical_path_ratio; done; done
echo "== memory, 100,000 wide in flight, fixed 2 s (load $(la))"
for r in 1 2; do for side in old new; do b=$O; [ $side = new ] && b=$N; echo -n "$side "; $b loadtest --shape wide --tasks 100000 --latency fixed:2000 --json 2>/dev/null | j max_in_flight peak_rss_bytes baseline_rss_bytes rss_per_in_flight_bytes; done; done
echo "== dispatch with 10,000 in flight (load $(la))"
for r in 1 2 3; do for side in old new; do b=$O; [ $side = new ] && b=$N; echo -n "$side "; $b loadtest --shape layered --tasks 20000 --width 10000 --fan-in 2 --latency lognormal:2000:0.5 --json 2>/dev/null | j max_in_flight dispatch_ms; done; done
echo "== end $(date -u +%H:%M:%S) load $(la)"
