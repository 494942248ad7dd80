#!/usr/bin/env bash
# Two builds of planwave, A (before a change) and B (after), compared on the load tester's
# own client CPU per request (issue 37): each round runs docs/bench/loadtest_peers.sh with
# PEERS=none once per binary, the order alternating between rounds, and the medians over the
# rounds close the output. Every run has its own `sim-llm serve` (the binary's own; the server
# is not what is measured: its CPU is not counted).
#
# A benchmark, not a test: never run in CI; its figures mean something only with release
# builds on a quiet machine.
#
#   A=/tmp/planwave-before B=target/release/planwave docs/bench/loadtest_cpu_ab.sh
#   ROUNDS=1 N=200 DURATION=2 A=... B=... docs/bench/loadtest_cpu_ab.sh   # a quick check
#
# Settings (environment): A and B the binaries; ROUNDS (default 3); POINTS (default
# "c100 r200"), APIS ("chat completions"), N and DURATION as loadtest_peers.sh takes them
# (defaults here 1000 requests and 10 s).
set -euo pipefail

: "${A:?the binary before}" "${B:?the binary after}"
ROUNDS=${ROUNDS:-3}
HERE=$(dirname "$0")
OUT=$(mktemp)
for round in $(seq "$ROUNDS"); do
  order="A B"
  [ $((round % 2)) -eq 0 ] && order="B A"
  for which in $order; do
    bin=${!which}
    PLANWAVE=$bin PEERS=none ROUNDS=1 POINTS=${POINTS:-c100 r200} \
      APIS=${APIS:-chat completions} N=${N:-1000} DURATION=${DURATION:-10} \
      "$HERE/loadtest_peers.sh" | awk -v w="$which" 'NR > 1 { print w, $0 }' | tee -a "$OUT"
  done
done
# Columns of loadtest_peers.sh after the A/B mark: tool, point, api, ..., CPU ms/req last.
echo "median client CPU ms per request (A -> B):"
python3 - "$OUT" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 4 and f[1] == "planwave":
        runs[(f[2], f[3], f[0])].append(float(f[-1]))
for point, api in sorted({(p, a) for p, a, _ in runs}):
    a, b = (statistics.median(runs[(point, api, w)]) for w in "AB")
    print(f"{point:6} {api:12} {a:7.3f} -> {b:7.3f}  ({b / a:.2f}x)")
PY
