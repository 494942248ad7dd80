#!/usr/bin/env bash
# What the load tester's newer features cost on the client (issue 37): CPU per request of
# `planwave loadtest` with a dataset, metrics scraping and the live view on, against the same
# load test without them, interleaved round by round against one `planwave sim-llm serve`.
# The issue's target: with the features on, CPU per request stays within 1.2x of without.
#
# A benchmark, not a test: it is never run in CI, and its figures mean something only on a
# quiet machine with a release build.
#
#   docs/bench/loadtest_features_cpu.sh                     # 5 rounds of 2000 requests
#   ROUNDS=1 N=200 docs/bench/loadtest_features_cpu.sh      # a quick check of the method
#
# Settings (environment):
#   PLANWAVE   the binary (default target/release/planwave; build it with --release)
#   ROUNDS     interleaved rounds (default 5); N requests per run (2000); C clients (100)
#   TOKENS     server output tokens per second per stream (200), LATENCY_MS its TTFT (10)
#   TOKENIZER  a tokenizer.json to add `--tokenizer` to the features run (when the binary
#              has that flag)
#
# Method: each round runs the two variants back to back (their order alternates), each
# timed with /usr/bin/time (user + system CPU of the process); CPU per request is that over
# the successful requests of the run's JSON. The dataset holds prompts of about the length
# of planwave's own subagent prompts, so the requests weigh the same. The table has every
# run and the median ratio features/baseline over the rounds.
set -euo pipefail

PLANWAVE=${PLANWAVE:-target/release/planwave}
PYTHON=${PYTHON:-python3}
ROUNDS=${ROUNDS:-5}
N=${N:-2000}
C=${C:-100}
TOKENS=${TOKENS:-200}
LATENCY_MS=${LATENCY_MS:-10}
OUT=$(mktemp -d)
trap 'kill "${SERVER_PID:-}" 2>/dev/null || true' EXIT

"$PLANWAVE" sim-llm serve --addr 127.0.0.1:0 --latency-ms "$LATENCY_MS" --sigma 0 \
  --tokens-per-sec "$TOKENS" > "$OUT/server.out" 2>/dev/null &
SERVER_PID=$!
for _ in $(seq 50); do [ -s "$OUT/server.out" ] && break; sleep 0.1; done
BASE=$(head -1 "$OUT/server.out")
ROOT=${BASE%/v1}

# A dataset of N prompts of about 1,500 characters, each a little different.
"$PYTHON" - "$N" > "$OUT/dataset.jsonl" <<'PY'
import json, sys
words = "revenue margin delivery capacity battery supply chain demand market share".split()
for i in range(int(sys.argv[1])):
    text = " ".join(words[(i + k) % len(words)] for k in range(220))
    print(json.dumps({"prompt": f"Request {i}: analyse {text}"}))
PY

FEATURES=(--dataset "$OUT/dataset.jsonl" --scrape-metrics "$ROOT/metrics" --live)
if [ -n "${TOKENIZER:-}" ] && "$PLANWAVE" loadtest --help | grep -q -- '--tokenizer'; then
  FEATURES+=(--tokenizer "$TOKENIZER")
fi

# CPU ms per successful request of one load test with the given extra flags.
cpu_per_request() {
  /usr/bin/time -f '%U %S' -o "$OUT/cpu" "$PLANWAVE" loadtest --json --llm-url "$BASE" \
    --requests "$N" --concurrency "$C" "$@" > "$OUT/stdout" 2> "$OUT/stderr"
  read -r user sys < "$OUT/cpu"
  "$PYTHON" - "$OUT/stdout" "$user" "$sys" <<'PY'
import json, sys
ok = json.load(open(sys.argv[1]))["runs"][0]["serving"]["ok"]
print(f"{1000 * (float(sys.argv[2]) + float(sys.argv[3])) / max(1, ok):.4f}")
PY
}

printf '%-6s %16s %16s %8s\n' round 'baseline ms/req' 'features ms/req' ratio
ratios=()
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    base=$(cpu_per_request); feat=$(cpu_per_request "${FEATURES[@]}")
  else
    feat=$(cpu_per_request "${FEATURES[@]}"); base=$(cpu_per_request)
  fi
  ratio=$("$PYTHON" -c "print(f'{$feat / $base:.3f}')")
  ratios+=("$ratio")
  printf '%-6s %16s %16s %8s\n' "$round" "$base" "$feat" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median features/baseline: $median (target: at most 1.2); features: ${FEATURES[*]}"
