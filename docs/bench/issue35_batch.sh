#!/usr/bin/env bash
# Issue 35 figure: the 100-job template batch through the Batch API (`--batch-api`) against
# the normal path, both against `sim-llm serve --prefix-cache` (whose /v1/batches answers each
# line with the same simulator and the same prefix cache). Prints each path's estimated cost and, for the Batch API, how many provider
# batches were submitted and how often each custom_id was sent.
#
#   docs/bench/issue35_batch.sh [PLANWAVE_BINARY]
#
# Token counts and costs do not depend on timing, so a debug binary gives the same figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${CARGO_TARGET_DIR:-$root/target}/debug/planwave}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# OpenAI's published gpt-4.1-mini prices (per million tokens); the Batch API halves them.
cat >"$work/planwave.toml" <<'TOML'
[prices]
batch_discount = 0.5
[prices.models."gpt-4.1-mini"]
input_per_mtok = 0.40
cached_input_per_mtok = 0.10
output_per_mtok = 1.60
TOML

mkdir -p "$work/plans"
# The template of docs/bench/issue35_cache.sh: five tasks in three steps, then the summary.
cat >"$work/plans/company.json" <<'JSON'
{"research_type": "company", "topic": "{{ company }}: an investment review",
 "objectives": ["Understand {{ company }}'s business", "Judge its financial health", "Form a view"],
 "tasks": [
  {"id": 1, "description": "{{ company }}: company overview and business model", "dependencies": [],
   "hints": {"data_needs": ["segments", "revenue mix"], "key_questions": ["What are the core products?"]}},
  {"id": 2, "description": "{{ company }}: financial performance and key metrics", "dependencies": [],
   "hints": {"data_needs": ["three years of revenue and profit", "margins"], "key_questions": ["How is profitability trending?"]}},
  {"id": 3, "description": "{{ company }}: competitive landscape", "dependencies": [1],
   "hints": {"data_needs": ["competitors", "market share"], "key_questions": ["What sets it apart?"]}},
  {"id": 4, "description": "{{ company }}: risks", "dependencies": [2],
   "hints": {"data_needs": ["leverage", "regulation"], "key_questions": ["What could go wrong?"]}},
  {"id": 5, "description": "{{ company }}: overall assessment and investment view", "dependencies": [3, 4],
   "hints": {"data_needs": ["valuation"], "key_questions": ["Is it worth investing in?"]}}
 ]}
JSON
for i in $(seq 1 100); do
  printf '{"id": "c%03d", "template": "plans/company.json", "vars": {"company": "Company %03d Holdings"}}\n' "$i" "$i"
done >"$work/jobs.jsonl"

measure() {
  local name=$1; shift
  # As the cache figure's server (prefix caching on), answering batches after 0.5 s.
  "$bin" sim-llm serve --addr 127.0.0.1:0 --latency-ms 0 --prefix-cache --batch-delay-ms 500 \
    >"$work/$name.addr" &
  local pid=$!
  until [ -s "$work/$name.addr" ]; do sleep 0.1; done
  local url; url=$(head -1 "$work/$name.addr")
  local t0; t0=$(date +%s.%N)
  "$bin" batch "$work/jobs.jsonl" --out "$work/$name" -q --jobs 100 \
    --llm-base-url "$url" --model gpt-4.1-mini --config "$work/planwave.toml" "$@"
  local t1; t1=$(date +%s.%N)
  curl -s "${url%/v1}/planwave/batch-stats" >"$work/$name.stats"
  kill "$pid"
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
measure batch-api --batch-api --batch-linger 1s --batch-poll 200ms --batch-poll-max 1s | tee "$work/batch.txt"
python3 - "$work/normal.txt" "$work/batch.txt" <<'PY'
import sys
cost = lambda p: float([l for l in open(p) if l.startswith("COST")][0].split()[2])
print(f"Batch API / normal estimated cost: {cost(sys.argv[2]) / cost(sys.argv[1]):.3f}x")
PY
