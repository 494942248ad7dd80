#!/usr/bin/env bash
# Issue 35 figure: the 100-job template batch through the Batch API (`--batch-api`) against
# the normal path, both against `sim-llm serve --prefix-cache` (whose /v1/batches answers each
# line with the same simulator and the same prefix cache). Prints each path's estimated cost
# and, for the Batch API (once per linger in $LINGERS, default "1s 60s"), how many provider
# batches were submitted and how often each custom_id was sent. A batch is submitted once
# every job waits on the Batch API, at the latest the linger after its first call.
#
#   docs/bench/issue35_batch.sh [PLANWAVE_BINARY]
#
# Token counts and costs do not depend on timing, so a debug binary gives the same figures.
set -euo pipefail
source "$(dirname "$0")/issue35_common.sh"

measure() {
  local name=$1; shift
  # As the cache figure's server (prefix caching on), answering batches after 0.5 s.
  start_sim "$name" --batch-delay-ms 500
  local t0; t0=$(date +%s.%N)
  "$bin" batch "$work/jobs.jsonl" --out "$work/$name" -q --jobs 100 \
    --llm-base-url "$url" --model gpt-4.1-mini --config "$work/planwave.toml" "$@"
  local t1; t1=$(date +%s.%N)
  curl -s "${url%/v1}/planwave/batch-stats" >"$work/$name.stats"
  kill "$sim_pid"
  python3 - "$work/$name/batch.json" "$work/$name.stats" "$name" "$t0" "$t1" <<'PY'
import json, sys
b = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
dups = len(s.get("duplicates", []))
print(f"{sys.argv[3]:>9}: jobs {len(b['jobs'])}, completed {b['completed']}, tokens {b['tokens']}, "
      f"estimated cost {b['cost']:.4f} USD, provider batches {s['batches_created']}, "
      f"lines {s['lines_submitted']}, custom_ids sent twice {dups}, "
      f"wall {float(sys.argv[5]) - float(sys.argv[4]):.1f} s")
print(f"COST {sys.argv[3]} {b['cost']}")
PY
}
measure normal | tee "$work/normal.txt"
for linger in ${LINGERS:-1s 60s}; do
  measure "linger-$linger" --batch-api --batch-linger "$linger" --batch-poll 200ms \
    --batch-poll-max 1s | tee "$work/batch.txt"
done
python3 - "$work/normal.txt" "$work/batch.txt" <<'PY'
import sys
cost = lambda p: float([l for l in open(p) if l.startswith("COST")][0].split()[2])
print(f"Batch API (last linger) / normal estimated cost: {cost(sys.argv[2]) / cost(sys.argv[1]):.3f}x")
PY
