# Sourced by docs/bench/issue35_cache.sh and issue35_batch.sh: the binary, a work directory
# (removed on exit, with any server left running), the price table, the 100-job template batch
# and a server starter.
#
# OpenAI's published gpt-4.1-mini prices (per million tokens): cached input is a quarter of the
# input price, and the Batch API halves everything (docs/guide/costs.md).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${1:-${CARGO_TARGET_DIR:-$root/target}/debug/planwave}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cat >"$work/planwave.toml" <<'TOML'
[prices]
batch_discount = 0.5
[prices.models."gpt-4.1-mini"]
input_per_mtok = 0.40
cached_input_per_mtok = 0.10
output_per_mtok = 1.60
TOML

mkdir -p "$work/plans"
# Five tasks in three dataflow steps, then the summary.
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

# start_sim NAME ARGS...: a fresh `sim-llm serve` on a free port, its base URL in $url.
start_sim() {
  local name=$1; shift
  "$bin" sim-llm serve --addr 127.0.0.1:0 --latency-ms 0 --prefix-cache "$@" >"$work/$name.addr" &
  sim_pid=$!
  until [ -s "$work/$name.addr" ]; do sleep 0.1; done
  url=$(head -1 "$work/$name.addr")
}
