#!/bin/bash
# Issue 17's scale and peer targets (and issue 16's round), one session, two builds compared:
#   A=old/planwave B=new/planwave [OHA=oha] [DATA=dir] [PEERS=dir] docs/bench/scale_targets.sh
# A and B are release builds of `planwave`; OHA is `cargo install oha --locked`; DATA holds the
# generated million-task plans (written here with the plan crate's `write_plan` example when
# missing); PEERS is the .ci/peers directory (aimock, for stream_plan.py). Run it on an idle
# machine; see docs/benchmarks.md, "Engine targets at scale".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
: "${A:?A=old planwave binary}" "${B:?B=new planwave binary}"
OHA=${OHA:-oha}; D=${DATA:-/tmp/planwave-scale}; PEERS=${PEERS:-${PLANWAVE_PEERS_DIR:-$ROOT/target/test-peers}}
PY=$ROOT/crates/loadtest/benches/asyncio_dataflow.py
mkdir -p "$D"
if [ ! -s "$D/layered.json" ]; then
  (cd "$ROOT" && cargo build -q --release -p planwave-plan --example write_plan)
  W=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/write_plan
  "$W" wide 1000000 > "$D/wide.json"; "$W" layered 1000000 1000 3 > "$D/layered.json"
fi
la(){ cut -d' ' -f1-3 /proc/loadavg; }
# SYNs the kernel dropped because a listener's accept queue was full (each retried a second
# later): a run with drops measured the server's queue, not the client (docs/benchmarks.md).
drops(){ awk '$1=="TcpExt:" {if(!h){for(i=1;i<=NF;i++) n[i]=$i; h=1} else {for(i=1;i<=NF;i++) if(n[i]=="ListenDrops") print $i}}' /proc/net/netstat; }
echo "== start $(date -u +%H:%M:%S) load $(la)"
echo "== validate 1M (wall user sys maxKB)"
for r in 1 2 3; do for X in A B; do eval BIN=\$$X; for f in wide layered; do
  /usr/bin/time -f "$X $f %e s %U u %S s %M KB" $BIN validate --max-input-bytes 200000000 $D/$f.json >/dev/null 2>/tmp/vt.txt; tail -1 /tmp/vt.txt; done; done; done
echo "== memory 100k wide fixed:2000 (load $(la))"
for r in 1 2; do for X in A B; do eval BIN=\$$X;
  $BIN loadtest --shape wide --tasks 100000 --latency fixed:2000 --json 2>/dev/null | python3 -c "import json,sys;d=json.load(sys.stdin);r=d['runs'][0] if 'runs' in d else d;print('$X', {k:v for k,v in r.items() if 'rss' in k or 'in_flight' in k})"; done; done
echo "== throughput zero latency (load $(la))"
for r in 1 2 3; do for s in "chain 5000" "wide 10000"; do set -- $s
  python3 $PY $1 $2 | python3 -c "import json,sys;d=json.load(sys.stdin);print('asyncio $1 %.0f' % d['tasks_per_sec'])"
  for X in B A; do eval BIN=\$$X; $BIN loadtest --shape $1 --tasks $2 --latency fixed:0 2>&1 | grep -E 'tasks/s' | sed "s/^/$X $1 /"; done; done; done
echo "== dispatch tail, 10 consecutive runs of B (load $(la))"
for i in $(seq 10); do echo "run $i load $(la) $($B loadtest --shape layered --tasks 20000 --width 10000 --fan-in 2 --latency lognormal:2000:0.5 | grep -E 'dispatch (p50|p99|max)' | tr -s ' ' | tr '\n' ' ')"; done
echo "== SSE and JSON vs oha (load $(la))"
cd $D
$B sim-llm serve > fsrv.out 2> fsrv.err & SPID=$!
for i in $(seq 50); do URL=$(grep -o 'http://[^ ]*' fsrv.out | head -1); [ -n "$URL" ] && break; sleep 0.1; done
BODY='{"model":"planwave-sim-1","messages":[{"role":"user","content":"Write the section on market size."}],"stream":true}'
JBODY='{"model":"planwave-sim-1","messages":[{"role":"user","content":"Write the section on market size."}]}'
for r in 1 2 3; do
  echo "round $r load $(la)"
  d0=$(drops)
  $OHA -n 10000 -c 1000 -m POST -H 'content-type: application/json' -d "$BODY" --no-tui --output-format json $URL/chat/completions > foha.json 2>/dev/null
  python3 -c "import json;d=json.load(open('foha.json'));print('  oha sse rps %.0f ok %s listen drops $(( $(drops) - d0 ))' % (d['summary']['requestsPerSec'], d['summary']['successRate']))"
  for X in B A; do eval BIN=\$$X; d0=$(drops)
    /usr/bin/time -f '%U %S' -o ft.txt $BIN loadtest --llm-url $URL --requests 10000 --concurrency 1000 --json > flt.json 2>/dev/null
    python3 -c "import json;d=json.load(open('flt.json'));s=d['runs'][0]['serving'];u,sy=open('ft.txt').read().split()[-2:];print('  $X sse rps %.0f cpu %.0f us/req errors %s listen drops $(( $(drops) - d0 ))' % (s['request_throughput'], (float(u)+float(sy))/10000*1e6, d['runs'][0].get('errors')))"
  done
  d0=$(drops)
  $OHA -n 10000 -c 1000 -m POST -H 'content-type: application/json' -d "$JBODY" --no-tui --output-format json $URL/chat/completions > foj.json 2>/dev/null
  python3 -c "import json;d=json.load(open('foj.json'));print('  oha json rps %.0f ok %s listen drops $(( $(drops) - d0 ))' % (d['summary']['requestsPerSec'], d['summary']['successRate']))"
  d0=$(drops)
  /usr/bin/time -f '%U %S' -o ft.txt $B loadtest --llm-url $URL --requests 10000 --concurrency 1000 --no-stream --json > flj.json 2>/dev/null
  python3 -c "import json;d=json.load(open('flj.json'));s=d['runs'][0]['serving'];u,sy=open('ft.txt').read().split()[-2:];print('  B json rps %.0f cpu %.0f us/req listen drops $(( $(drops) - d0 ))' % (s['request_throughput'], (float(u)+float(sy))/10000*1e6))"
done
kill $SPID
echo "== TTFT client vs server (load $(la))"
$B sim-llm serve --latency-ms 20 --sigma 0.3 --tokens-per-sec 500 --token-jitter 0.2 > ft.out 2> ft.err & P=$!
for i in $(seq 50); do URL=$(grep -o 'http://[^ ]*' ft.out | head -1); [ -n "$URL" ] && break; sleep 0.1; done
for r in 1 2; do
  $B loadtest --llm-url $URL --requests 400 --concurrency 8 --json > flt-t.json 2>/dev/null
  python3 -c "
import json;d=json.load(open('flt-t.json'));s=d['runs'][0]['serving'];c=s['ttft_ms'];v=s['server']['ttft_ms']
print('round $r ttft p50 client %.3f server %.3f diff %.3f ms; p90 %.3f / %.3f; p99 %.3f / %.3f' % (c['p50'],v['p50'],c['p50']-v['p50'],c['p90'],v['p90'],c['p99'],v['p99']))"
done
kill $P
echo "== stream_plan (issue 16) B, 2 runs (load $(la))"
cd $ROOT
for r in 1 2; do python3 docs/bench/stream_plan.py $B $PEERS $D/stream_plan_$r | tail -22; done
echo "== end $(date -u +%H:%M:%S) load $(la)"
