#!/bin/bash
# Zero-latency load tests of two builds, interleaved (A then B, R rounds), for issue 17's
# per-task and end-of-run work (docs/benchmarks.md before 27 Nov, in git history: "Issue 17: the simulator's text and the
# end of the run"):
#   A=old/planwave B=new/planwave [R=5] [CALLGRIND=1] docs/bench/end_of_run.sh
# Per run: tasks/s end to end, makespan, total (with report), end = total - makespan (the
# start-up before the first dispatch plus the end-of-run phase), task-clock and peak RSS.
# With CALLGRIND=1 it first counts each build's instructions (valgrind's callgrind; the
# profiles are left in $OUT, default /tmp/planwave-eor).
set -u
: "${A:?A=old planwave binary}" "${B:?B=new planwave binary}"
R=${R:-5}; OUT=${OUT:-/tmp/planwave-eor}; mkdir -p "$OUT"
WORKLOADS=("wide 10000" "chain 5000")
if [ "${CALLGRIND:-0}" = 1 ]; then
  for w in "${WORKLOADS[@]}"; do set -- $w; for X in A B; do eval BIN=\$$X
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$X.$1" "$BIN" loadtest --shape "$1" \
      --tasks "$2" --latency fixed:0 >/dev/null 2>"$OUT/cg.$X.$1.err"
    echo "callgrind $X $1 $2: $(grep -o 'refs: *[0-9,]*' "$OUT/cg.$X.$1.err") instructions"
  done; done
fi
for w in "${WORKLOADS[@]}"; do set -- $w
  for r in $(seq 1 "$R"); do for X in A B; do eval BIN=\$$X
    perf stat -x, -e task-clock -o "$OUT/perf.txt" /usr/bin/time -f '%M' -o "$OUT/time.txt" \
      "$BIN" loadtest --shape "$1" --tasks "$2" --latency fixed:0 >"$OUT/lt.txt" 2>&1
    mk=$(awk '/^makespan  /{print $2}' "$OUT/lt.txt")
    tot=$(awk '/^total \(with report\)/{print $4}' "$OUT/lt.txt")
    tps=$(awk '/^tasks\/s \(end to end\)/{print $5}' "$OUT/lt.txt")
    tc=$(awk -F, '/task-clock/{printf "%.0f", $1}' "$OUT/perf.txt")
    printf '%s %s r%d %s tasks/s=%s makespan=%s total=%s end=%s cpu=%sms rss=%sKB load=%s\n' \
      "$1" "$2" "$r" "$X" "$tps" "$mk" "$tot" "$(echo "$tot - $mk" | bc)" "$tc" \
      "$(tail -1 "$OUT/time.txt")" "$(cut -d' ' -f1 /proc/loadavg)"
  done; done
done
