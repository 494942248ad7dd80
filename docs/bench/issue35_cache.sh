#!/usr/bin/env bash
# Issue 35 figures: a 100-job template batch against `sim-llm serve --prefix-cache`, the old
# prompt layout (docs/bench/issue35-old-prompts as a --prompts override) against the new
# (built in). Prints the cached share of prompt tokens and the estimated cost of each.
#
#   docs/bench/issue35_cache.sh [PLANWAVE_BINARY]
#
# Token counts and costs do not depend on timing, so a debug binary gives the same figures.
set -euo pipefail
source "$(dirname "$0")/issue35_common.sh"
# The same 100 companies as goals: each job plans first (the planner's prompt carries the
# rules, the plan's schema and two examples).
for i in $(seq 1 100); do
  printf '{"id": "g%03d", "goal": "Company %03d Holdings: an investment review"}\n' "$i" "$i"
done >"$work/goals.jsonl"

# One layout: a fresh server (empty cache), the batch, then the figures from batch.json.
measure() {
  local name=$1 jobs=$2; shift 2
  start_sim "$name"
  "$bin" batch "$work/$jobs" --out "$work/$name" -q --jobs 4 \
    --llm-base-url "$url" --model gpt-4.1-mini --config "$work/planwave.toml" "$@"
  kill "$sim_pid"
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
  start_sim "ex-$name"
  "$bin" run "$root/examples/tesla.json" --out "$work/ex-$name" -q --llm-base-url \
    "$url" --model gpt-4.1-mini --config "$work/planwave.toml" "$@" >/dev/null
  kill "$sim_pid"
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
