#!/usr/bin/env bash
# Issue 35 figures: a 100-job template batch against `sim-llm serve --prefix-cache`, the old
# prompt layout (docs/bench/issue35-old-prompts as a --prompts override) against the new
# (built in). Prints the cached share of prompt tokens and the estimated cost of each.
#
#   docs/bench/issue35_cache.sh [PLANWAVE_BINARY]
#
# Token counts and costs do not depend on timing, so a debug binary gives the same figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${CARGO_TARGET_DIR:-$root/target}/debug/planwave}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# OpenAI's published gpt-4.1-mini prices (per million tokens): cached input is a quarter of
# the input price, and the Batch API halves everything (docs/guide/costs.md).
cat >"$work/planwave.toml" <<'TOML'
[prices]
batch_discount = 0.5
[prices.models."gpt-4.1-mini"]
input_per_mtok = 0.40
cached_input_per_mtok = 0.10
output_per_mtok = 1.60
TOML

mkdir -p "$work/plans"
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
# The same 100 companies as goals: each job plans first (the planner's prompt carries the
# rules, the plan's schema and two examples).
for i in $(seq 1 100); do
  printf '{"id": "g%03d", "goal": "Company %03d Holdings: an investment review"}\n' "$i" "$i"
done >"$work/goals.jsonl"

# One layout: a fresh server (empty cache), the batch, then the figures from batch.json.
measure() {
  local name=$1 jobs=$2; shift 2
  "$bin" sim-llm serve --addr 127.0.0.1:0 --latency-ms 0 --prefix-cache >"$work/$name.addr" &
  local pid=$!
  until [ -s "$work/$name.addr" ]; do sleep 0.1; done
  local url; url=$(head -1 "$work/$name.addr")
  "$bin" batch "$work/$jobs" --out "$work/$name" -q --jobs 4 \
    --llm-base-url "$url" --model gpt-4.1-mini --config "$work/planwave.toml" "$@"
  kill "$pid"
  python3 - "$work/$name/batch.json" "$name" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
p, c = b.get("prompt_tokens", 0), b.get("cached_tokens", 0)
print(f"{sys.argv[2]:>9}: jobs {len(b['jobs'])}, prompt tokens {p}, cached {c} ({100*c/max(p,1):.1f} %), "
      f"tokens {b['tokens']}, estimated cost {b['cost']:.4f} USD")
PY
}
echo "template batch (100 jobs given a plan):"
measure old jobs.jsonl --prompts "$root/docs/bench/issue35-old-prompts"
measure new jobs.jsonl
echo "goal batch (100 jobs that plan first):"
measure old-goals goals.jsonl --no-plan-cache --prompts "$root/docs/bench/issue35-old-prompts"
measure new-goals goals.jsonl --no-plan-cache

# The example plan, one run per layout on a fresh server: the cache can only help across the
# run's own calls (its subagents and the integrator share the instructions).
example() {
  local name=$1; shift
  "$bin" sim-llm serve --addr 127.0.0.1:0 --latency-ms 0 --prefix-cache >"$work/ex-$name.addr" &
  local pid=$!
  until [ -s "$work/ex-$name.addr" ]; do sleep 0.1; done
  "$bin" run "$root/examples/tesla.json" --out "$work/ex-$name" -q --llm-base-url \
    "$(head -1 "$work/ex-$name.addr")" --model gpt-4.1-mini --config "$work/planwave.toml" "$@" >/dev/null
  kill "$pid"
  python3 - "$work/ex-$name/run.json" "$name" <<'PY'
import json, sys
u = json.load(open(sys.argv[1]))["stats"]["usage"]
p, c = u["prompt_tokens"], u.get("cached_tokens", 0)
print(f"{sys.argv[2]:>9}: prompt tokens {p}, cached {c} ({100*c/max(p,1):.1f} %), completion {u['completion_tokens']}")
PY
}
echo "examples/tesla.json (one run, 4 tasks and the integrator):"
example old --prompts "$root/docs/bench/issue35-old-prompts"
example new
