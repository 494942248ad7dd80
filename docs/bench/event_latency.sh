#!/bin/bash
# Issue 39's event latency: from an event published on a run's journal subject (one
# acknowledged JetStream message, as a worker's live journal mirror publishes each batch) to
# its arrival at an SSE client of `serve --nats` (`/api/runs/{id}/events`), over EVENTS events
# GAP_US microseconds apart; prints p50, p90, p99 and max per round. The server, the publisher
# and the SSE client are all release builds (`cargo test --release` builds the binary the
# test starts). On a quiet machine, from the repository, with the test peers installed
# (`.ci/peers`; PLANWAVE_PEERS_DIR if not under target/test-peers):
#   docs/bench/event_latency.sh
# EVENTS (10000), GAP_US (1000) and ROUNDS (3) change the run. See docs/benchmarks.md,
# "`serve --nats`: event latency through JetStream".
set -eu
cd "$(dirname "$0")/../.."
EVENTS=${EVENTS:-10000} GAP_US=${GAP_US:-1000} ROUNDS=${ROUNDS:-3}
la(){ cut -d' ' -f1-3 /proc/loadavg; }
echo "== build (release) $(date -u +%H:%M:%S)"
cargo test --release --test tests --no-run 2>&1 | tail -1
for r in $(seq "$ROUNDS"); do
  echo "== round $r of $ROUNDS, $EVENTS events ${GAP_US} us apart, $(date -u +%H:%M:%S) load $(la)"
  out=$(PLANWAVE_BENCH_EVENTS=$EVENTS PLANWAVE_BENCH_GAP_US=$GAP_US \
    cargo test --release --test tests bench_serve_nats_event_latency -- --ignored --nocapture 2>&1) || true
  if ! grep -E "^events " <<<"$out"; then
    tail -20 <<<"$out"
    echo "no figure (is nats-server installed under the test peers' py/bin?)" >&2
    exit 1
  fi
done
echo "== end $(date -u +%H:%M:%S) load $(la)"
