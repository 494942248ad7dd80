#!/usr/bin/env bash
# planwave loadtest against the load testers its users would otherwise pick (issue 37), all
# pointed at one `planwave sim-llm serve`, interleaved round by round, and the table the
# issue asks for: requests/s, output tokens/s, TTFT and ITL p50/p99 against the server's own
# TTFT, errors, and client CPU per request.
#
# A benchmark, not a test: it is never run in CI. The peers go into virtual environments
# outside the repository, one per peer (aiperf 0.13 pins aiofiles~=24.1 and inference-perf
# 0.7 wants >=25.1, so they cannot share one). guidellm is not run: it pulls about 6 GB of
# torch and CUDA wheels. PEERS=none runs planwave alone (no install at all).
#
# What is like-for-like, and what is not (the `api` column says which comparison a row is in;
# compare rows of the same api only):
#   chat         planwave and aiperf, POST /v1/chat/completions, streamed. Neither sends
#                max_tokens, so every answer is the simulator's own (about 290 tokens; its
#                length follows the prompt's first 200 characters, so the two tools' answers
#                differ by a few tokens: the `srv out` column has them). The prompts are
#                not the same: planwave's own subagent prompts, aiperf's synthetic ones.
#                inference-perf has no row here: its only chat data without a dataset
#                download (`mock`) asks for 30-token answers (max_tokens 30 with ignore_eos,
#                fixed in its client), a tenth of the others' work per request.
#   completions  all three, POST /v1/completions, streamed, with the same request: a prompt
#                of about IN_TOKENS tokens and max_tokens OUT_TOKENS (290, the length of the
#                chat rows' answers), so every answer is exactly OUT_TOKENS long, for every
#                tool (`srv out` shows 290.0 on each row). inference-perf: `random` data with
#                fixed input and output distributions and its default ignore_eos (its random
#                and synthetic data speak only completions; `shared_prefix` without
#                multimodal parts builds completion requests even with `api: chat`, see
#                load_lazy_data in datagen/synthetic/shared_prefix_datagen.py, so it went to
#                /v1/completions, which `sim-llm serve` did not answer then: the likely cause
#                of its old 404s, not re-run). aiperf: --isl/--osl
#                with spread 0 and ignore_eos. planwave: --input-tokens and --output-tokens;
#                it sends no ignore_eos, and needs none here: the simulator's own answer to
#                its completions prompts is about 384 tokens, so each is cut at OUT_TOKENS.
#                The prompts' words are each tool's own: the peers' are IN_TOKENS tokens of
#                the tiny local tokenizer, planwave's IN_TOKENS tokens of the simulator's
#                count (3 characters a token). The simulator counts about the same for both
#                (`srv in` in a small check: planwave 200, inference-perf about 195, aiperf
#                about 170), and its prefill costs nothing by default, so the server's work
#                per request is the answer's, the same for every tool.
#   Everything else is the same in both: one server, the same point, rounds interleaved,
#   streaming with usage, each tool's CPU (user + system of its processes) per successful
#   request. The tools count ITL differently (aiperf: each request's mean gap, then
#   percentiles over requests; planwave and inference-perf: every gap).
#
#   docs/bench/loadtest_peers.sh                       # every point, 3 rounds
#   PEERS=none ROUNDS=1 N=200 docs/bench/loadtest_peers.sh
#   VENV=/work/peers-venv PYTHON=python3.12 ROUNDS=1 N=400 DURATION=20 \
#     POINTS="c100 r50" docs/bench/loadtest_peers.sh   # a small check of the script
#
# Settings (environment):
#   PLANWAVE   the binary (default target/release/planwave; build it with --release)
#   VENV       where the peers' venvs go, VENV/aiperf, VENV/inference-perf ... (default
#              ~/.cache/planwave-bench/venv)
#   PYTHON     the Python that makes them: inference-perf needs 3.12 or later
#   PEERS      "aiperf inference-perf" (default), one of them, or "none"
#   APIS       "chat completions" (default), or one of them (the comparisons above)
#   IN_TOKENS, OUT_TOKENS  the completions rows' prompt and answer tokens (200 and 290)
#   ROUNDS     interleaved rounds (default 3)
#   N          requests per closed-loop point (default 2000); DURATION for the open loop (20s)
#   TOKENS     server output tokens per second per stream (default 200), LATENCY_MS its TTFT (10)
#   POINTS     "c100 c1000 r200" (concurrency 100, concurrency 1000, Poisson 200/s)
#
# Columns: requests/s, output tokens/s, the client's TTFT and ITL p50/p99 (ms), the server's
# own TTFT p50 for the same answers, the server's prompt and output tokens per answer (what
# makes the rows like-for-like), errors, and client CPU ms per request.
set -euo pipefail

PLANWAVE=${PLANWAVE:-target/release/planwave}
VENV=${VENV:-$HOME/.cache/planwave-bench/venv}
PYTHON=${PYTHON:-python3}
PEERS=${PEERS:-aiperf inference-perf}
ROUNDS=${ROUNDS:-3}
N=${N:-2000}
DURATION=${DURATION:-20}
TOKENS=${TOKENS:-200}
LATENCY_MS=${LATENCY_MS:-10}
POINTS=${POINTS:-c100 c1000 r200}
APIS=${APIS:-chat completions}
IN_TOKENS=${IN_TOKENS:-200}
OUT_TOKENS=${OUT_TOKENS:-290}
OUT=$(mktemp -d)
trap 'kill "${SERVER_PID:-}" 2>/dev/null || true' EXIT

install_peers() {
  [ "$PEERS" = none ] && return
  for p in $PEERS; do
    [ -x "$VENV/$p/bin/python" ] || "$PYTHON" -m venv "$VENV/$p"
    case $p in
      aiperf) "$VENV/$p/bin/pip" install -q 'aiperf==0.13.*' tokenizers ;;
      inference-perf) "$VENV/$p/bin/pip" install -q 'inference-perf==0.7.*' ;;
      *) echo "unknown peer $p" >&2; exit 2 ;;
    esac
  done
  # Both peers need a tokenizer and there is no hub here: train a tiny local one (every
  # peer's venv has the tokenizers package), with the two files transformers' AutoTokenizer
  # reads beside it (inference-perf loads it that way).
  if [ ! -f "$OUT/tok/tokenizer.json" ]; then
    mkdir -p "$OUT/tok"
    local first=${PEERS%% *}
    "$VENV/$first/bin/python" - "$OUT/tok" <<'PY'
import json, sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
t = Tokenizer(models.BPE(unk_token="[UNK]"))
t.pre_tokenizer = pre_tokenizers.Whitespace()
t.train_from_iterator(["the quick brown fox jumps over the lazy dog " * 50],
                      trainers.BpeTrainer(vocab_size=200, special_tokens=["[UNK]"]))
t.save(sys.argv[1] + "/tokenizer.json")
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]"},
          open(sys.argv[1] + "/tokenizer_config.json", "w"))
json.dump({"model_type": "gpt2"}, open(sys.argv[1] + "/config.json", "w"))
PY
  fi
}

start_server() {
  "$PLANWAVE" sim-llm serve --addr 127.0.0.1:0 --latency-ms "$LATENCY_MS" --sigma 0 \
    --tokens-per-sec "$TOKENS" > "$OUT/server.out" 2>/dev/null &
  SERVER_PID=$!
  for _ in $(seq 50); do [ -s "$OUT/server.out" ] && break; sleep 0.1; done
  BASE=$(head -1 "$OUT/server.out")          # http://127.0.0.1:PORT/v1
  ROOT=${BASE%/v1}
}

# The server's own figures so far, to take a tool run's answers out of them afterwards.
snapshot() {
  curl -s "$ROOT/planwave/stats" > "$1"
  curl -s "$ROOT/planwave/arrivals" > "$1.arrivals"
}

# The rate at which the server received one tool's requests, on the server's own clock: the
# same definition for every tool (each tool's own req/s counts the drain after its last send
# its own way, which at an open-loop point is a difference of definition, not of capacity).
received_rate() {
  "$PYTHON" - "$1.arrivals" "$2.arrivals" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
seen = {x["n"] for x in a["arrivals"]}
new = sorted(x["at_us"] for x in b["arrivals"] if x["n"] not in seen)
span = (new[-1] - new[0]) / 1e6 if len(new) > 1 else 0
print((len(new) - 1) / span if span > 0 else float("nan"))
PY
}

# The server's TTFT p50 of the answers between two snapshots, and its prompt and output
# tokens per answer.
server_row() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f))["serving"] for f in sys.argv[1:3])
n = b["completed"] - a["completed"]
t = sorted(b["ttft_ms"][a["completed"]:b["completed"]])
per = lambda k: (b[k] - a[k]) / n if n else float("nan")
print(t[len(t) // 2] if t else float("nan"), per("prompt_tokens"), per("output_tokens"))
PY
}

# CPU seconds (user + system) of a command and its children, into $OUT/cpu.
timed() { /usr/bin/time -f '%U %S' -o "$OUT/cpu" "$@" > "$OUT/stdout" 2> "$OUT/stderr"; }

run_planwave() {
  local load request=()
  case $1 in
    c*) load=(--requests "$N" --concurrency "${1#c}") ;;
    r*) load=(--rate "${1#r}" --duration "${DURATION}s") ;;
  esac
  # Prompts sized in the simulator's tokens (3 characters), which is about what the peers'
  # prompts of IN_TOKENS tokens of the tiny local tokenizer come to (`srv in`).
  [ "$2" = completions ] && request=(--endpoint completions --input-tokens "$IN_TOKENS"
    --output-tokens "$OUT_TOKENS")
  timed "$PLANWAVE" loadtest --json --llm-url "$BASE" "${load[@]}" "${request[@]}"
  "$PYTHON" - "$OUT/stdout" <<'PY' > "$OUT/row"
import json, sys
s = json.load(open(sys.argv[1]))["runs"][0]["serving"]
print(s["ok"], s["request_throughput"], s["output_tokens_per_sec"], s["ttft_ms"]["p50"],
      s["ttft_ms"]["p99"], s["itl_ms"]["p50"], s["itl_ms"]["p99"], s["requests"] - s["ok"])
PY
}

run_aiperf() {
  local dir="$OUT/aiperf-$1-$2-$RANDOM" load request=(--endpoint-type chat)
  case $1 in
    c*) load=(--concurrency "${1#c}" --request-count "$N") ;;
    r*) load=(--request-rate "${1#r}" --request-rate-mode poisson
              --request-count "$(( ${1#r} * DURATION ))") ;;
  esac
  [ "$2" = completions ] && request=(--endpoint-type completions --isl "$IN_TOKENS" --isl-stddev 0
    --osl "$OUT_TOKENS" --osl-stddev 0 --extra-inputs '{"ignore_eos": true}')
  timed "$VENV/aiperf/bin/aiperf" profile --model planwave-sim-1 --url "$ROOT" \
    "${request[@]}" --streaming --tokenizer "$OUT/tok" --use-server-token-count \
    --ui none "${load[@]}" --artifact-dir "$dir"
  # aiperf's JSON export (profile_export_aiperf.json): metrics by tag, each with avg, p50,
  # p99 (ms for times), and the failed requests in error_summary. Its ITL is each request's
  # mean gap, then percentiles over requests (planwave's pools every gap).
  "$PYTHON" - "$dir" <<'PY' > "$OUT/row"
import glob, json, sys
f = sorted(glob.glob(sys.argv[1] + "/**/profile_export_aiperf.json", recursive=True))[-1]
m = json.load(open(f))
g = lambda k, q: (m.get(k) or {}).get(q, float("nan"))
errors = sum(e.get("count", 0) for e in m.get("error_summary") or [])
print(g("request_count", "avg"), g("request_throughput", "avg"),
      g("output_token_throughput", "avg"), g("time_to_first_token", "p50"),
      g("time_to_first_token", "p99"), g("inter_token_latency", "p50"),
      g("inter_token_latency", "p99"), errors)
PY
}

# inference-perf 0.7 on /v1/completions with `random` data: every prompt IN_TOKENS tokens of
# the local tokenizer, every answer exactly OUT_TOKENS (max_tokens, with its default ignore_eos).
# The data needs as many lengths as requests (total_count).
run_inference_perf() {
  local dir="$OUT/ip-$1-$RANDOM" stages count
  local cfg="$dir.yaml"
  case $1 in
    c*) count=$N stages="type: concurrent
  stages: [{concurrency_level: ${1#c}, num_requests: $N}]" ;;
    r*) count=$(( ${1#r} * DURATION * 2 )) stages="type: poisson
  stages: [{rate: ${1#r}, duration: $DURATION}]" ;;
  esac
  cat > "$cfg" <<YAML
load:
  $stages
  num_workers: 4
  worker_max_concurrency: 1000
api: {type: completion, streaming: true}
server: {type: vllm, model_name: planwave-sim-1, base_url: $ROOT, ignore_eos: true}
tokenizer: {pretrained_model_name_or_path: $OUT/tok}
data:
  type: random
  input_distribution: {type: fixed, min: $IN_TOKENS, max: $IN_TOKENS, mean: $IN_TOKENS, std_dev: 0, total_count: $count}
  output_distribution: {type: fixed, min: $OUT_TOKENS, max: $OUT_TOKENS, mean: $OUT_TOKENS, std_dev: 0, total_count: $count}
report: {request_lifecycle: {summary: true, use_server_output_tokens: true}}
storage: {local_storage: {path: $dir}}
YAML
  timed "$VENV/inference-perf/bin/inference-perf" --config_file "$cfg"
  # Its summary: seconds, percentiles named p1..p99 with `median` for p50.
  "$PYTHON" - "$dir" <<'PY' > "$OUT/row"
import glob, json, sys
f = sorted(glob.glob(sys.argv[1] + "/**/summary_lifecycle_metrics.json", recursive=True))[-1]
d = json.load(open(f))
s, r = d.get("successes", {}), d.get("failures", {})
lat, thr = s.get("latency", {}), s.get("throughput", {})
ms = lambda k, q: 1000 * (lat.get(k) or {}).get(q, float("nan"))
print(s.get("count", 0), thr.get("requests_per_sec", float("nan")),
      thr.get("output_tokens_per_sec", float("nan")), ms("time_to_first_token", "median"),
      ms("time_to_first_token", "p99"), ms("inter_token_latency", "median"),
      ms("inter_token_latency", "p99"), r.get("count", 0))
PY
}

# The tools of one comparison (see the header): inference-perf on completions only.
tools_for() {
  local peers=""
  [ "$PEERS" = none ] || peers=$PEERS
  case $1 in
    chat) echo planwave ${peers//inference-perf/} ;;
    completions) echo planwave $peers ;;
    *) echo "unknown api $1" >&2; exit 2 ;;
  esac
}

install_peers
start_server
printf '%-15s %-6s %-11s %9s %9s %11s %9s %9s %8s %8s %10s %7s %7s %6s %10s\n' tool point api \
  'req/s' 'srv recv/s' 'out tok/s' 'TTFT p50' 'TTFT p99' 'ITL p50' 'ITL p99' 'srv TTFT' 'srv in' \
  'srv out' errors 'CPU ms/req'
for round in $(seq "$ROUNDS"); do
  for point in $POINTS; do
    for api in $APIS; do
      for tool in $(tools_for "$api"); do
        snapshot "$OUT/before.json"
        "run_${tool//-/_}" "$point" "$api" || { echo "$tool $point $api: failed (see $OUT/stderr)"; continue; }
        snapshot "$OUT/after.json"
        read -r server_ttft srv_in srv_out < <(server_row "$OUT/before.json" "$OUT/after.json")
        recv=$(received_rate "$OUT/before.json" "$OUT/after.json")
        read -r ok rps tps t50 t99 i50 i99 errors < "$OUT/row"
        read -r user sys < "$OUT/cpu"
        cpu=$("$PYTHON" -c "print(1000 * ($user + $sys) / max(1, float('$ok')))")
        printf '%-15s %-6s %-11s %9.1f %9.1f %11.0f %9.2f %9.2f %8.3f %8.3f %10.2f %7.1f %7.1f %6s %10.3f\n' \
          "$tool" "$point" "$api" "$rps" "$recv" "$tps" "$t50" "$t99" "$i50" "$i99" "$server_ttft" \
          "$srv_in" "$srv_out" "$errors" "$cpu"
      done
    done
  done
done
