#!/usr/bin/env python3
"""Figures for `planwave serve` (docs/benchmarks.md, issue 15). Standard library + curl only.

  serve_bench.py sse BINARY [--tasks 10000] [--subscribers 100] [--latency-ms 0] [--sigma 0] [--pairs 3]
                            [--client asyncio|curl]
      The same generated run (layered DAG, seeded) with and without SUBSCRIBERS Server-Sent
      Events clients, each reading the whole stream from the first event to `end`,
      alternating, PAIRS times. `--client asyncio` (the default) reads all the streams in this
      one process (one thread, asyncio sockets: about one process's worth of CPU taken from
      the server); `--client curl` starts one `curl -N` process per subscriber. Reports each run's engine makespan (run.json
      stats.makespan_ms) and wall time (run.json started_at -> finished_at), and the ratio of
      the medians.

  serve_bench.py first-byte BINARY [--runs 1000] [--requests 200]
      A data directory with RUNS finished run directories (copies of one real run), then
      time to first byte (curl's time_starttransfer) of a run page, the runs list page and
      GET /api/runs: median and p95 over REQUESTS requests each.

Every server is started on 127.0.0.1:0 with a fresh temporary --data and stopped at the end.
"""

import argparse
import asyncio
import threading
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime


def start_server(binary, data):
    proc = subprocess.Popen(
        [binary, "serve", "--addr", "127.0.0.1:0", "--data", data, "--max-body", "256MiB"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        sys.exit(f"serve did not print its URL: {url!r}")
    return proc, url


def cpu_ms(pid):
    """User + system CPU time of process `pid` so far (all its threads), in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def stop_server(proc):
    proc.send_signal(2)  # SIGINT: a clean stop
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def layered_plan(tasks, seed=7):
    rng = random.Random(seed)
    width = int(tasks ** 0.5)
    out = []
    for i in range(tasks):
        layer = i // width
        deps = []
        if layer > 0:
            prev = range((layer - 1) * width, min(layer * width, tasks))
            deps = sorted({p + 1 for p in rng.sample(list(prev), min(2, len(prev)))})
        out.append({"id": i + 1, "description": f"Task {i + 1}", "dependencies": deps})
    return {"topic": "serve bench", "tasks": out}


def ts(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wait_run_json(path, timeout=1800):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            time.sleep(0.1)
    sys.exit(f"no {path} after {timeout} s")


async def read_stream(host, port, path):
    """One subscriber: GET the stream (HTTP/1.1, Connection: close) and read it to the end.
    Returns (bytes read, whether the stream ended with `event: end`)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
                 f"Connection: close\r\n\r\n".encode())
    await writer.drain()
    total, tail = 0, b""
    while True:
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        total += len(chunk)
        tail = (tail + chunk)[-4096:]
    writer.close()
    return total, b"event: end" in tail


def asyncio_subscribers(url, path, n, result):
    host, port = url.split("//", 1)[1].rstrip("/").rsplit(":", 1)

    async def all_streams():
        return await asyncio.gather(*(read_stream(host, int(port), path) for _ in range(n)))

    start = time.thread_time()
    result.extend(asyncio.run(all_streams()))
    result.append(("cpu_ms", (time.thread_time() - start) * 1000))


def one_run(url, data, plan, latency_ms, sigma, subscribers, client="asyncio", server=None):
    cpu_before = cpu_ms(server.pid)
    created = post(url + "api/runs", {"plan": plan, "options": {"sim_latency_ms": latency_ms, "sim_sigma": sigma}})
    rid = created["id"]
    path = f"/api/runs/{rid}/events"
    if client == "curl":
        subs = [subprocess.Popen(["curl", "-sN", "-o", "/dev/null", url + path.lstrip("/")])
                for _ in range(subscribers)]
    else:
        streams = []
        thread = threading.Thread(target=asyncio_subscribers, args=(url, path, subscribers, streams))
        if subscribers:
            thread.start()
    run = wait_run_json(os.path.join(data, rid, "run.json"))
    if client == "curl":
        for s in subs:  # each ends by itself at `end`
            s.wait(timeout=600)
        bad = [s.returncode for s in subs if s.returncode != 0]
    else:
        if subscribers:
            thread.join(timeout=600)
        client_cpu = [ms for tag, ms in streams if tag == "cpu_ms"]
        streams = [x for x in streams if x[0] != "cpu_ms"]
        bad = [n for n, ended in streams if not ended]
        if len(streams) != subscribers:
            bad.append(f"{subscribers - len(streams)} streams never finished")
        elif streams:
            print(f"  {subscribers} streams read, {streams[0][0] / 1e6:.1f} MB each, "
                  f"client CPU {client_cpu[0]:.0f} ms", flush=True)
    if bad:
        sys.exit(f"{len(bad)} subscribers failed: {bad[:5]}")
    wall = (ts(run["finished_at"]) - ts(run["started_at"])).total_seconds() * 1000
    # The server's CPU for this run (and for serving its subscribers), less sensitive to the
    # machine's load than the makespan.
    return run["status"], run["stats"]["makespan_ms"], wall, cpu_ms(server.pid) - cpu_before


def sse(args):
    plan = layered_plan(args.tasks)
    data = tempfile.mkdtemp(prefix="serve-bench-")
    proc, url = start_server(args.binary, data)
    rows = {0: [], args.subscribers: []}
    try:
        for pair in range(args.pairs):
            order = [0, args.subscribers] if pair % 2 == 0 else [args.subscribers, 0]
            for n in order:
                status, makespan, wall, cpu = one_run(url, data, plan, args.latency_ms, args.sigma, n,
                                                      args.client, proc)
                rows[n].append((makespan, wall, cpu))
                print(f"pair {pair + 1}: {n:3d} subscribers: {status}, makespan {makespan:8.1f} ms, "
                      f"wall {wall:8.1f} ms, server CPU {cpu:8.1f} ms", flush=True)
    finally:
        stop_server(proc)
        shutil.rmtree(data, ignore_errors=True)
    base_m = statistics.median(r[0] for r in rows[0])
    subs_m = statistics.median(r[0] for r in rows[args.subscribers])
    base_w = statistics.median(r[1] for r in rows[0])
    subs_w = statistics.median(r[1] for r in rows[args.subscribers])
    print(f"median makespan: {base_m:.1f} ms without, {subs_m:.1f} ms with {args.subscribers} "
          f"subscribers: ratio {subs_m / base_m:.3f}")
    print(f"median wall:     {base_w:.1f} ms without, {subs_w:.1f} ms with: ratio {subs_w / base_w:.3f}")
    base_c = statistics.median(r[2] for r in rows[0])
    subs_c = statistics.median(r[2] for r in rows[args.subscribers])
    print(f"median server CPU: {base_c:.1f} ms without, {subs_c:.1f} ms with: ratio {subs_c / base_c:.3f}")


def ttfb(url, n):
    out = []
    for _ in range(n):
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{time_starttransfer}", url],
                           capture_output=True, text=True, check=True)
        code, t = r.stdout.split()
        if code != "200":
            sys.exit(f"{url}: HTTP {code}")
        out.append(float(t) * 1000)
    out.sort()
    return statistics.median(out), out[int(len(out) * 0.95) - 1]


def first_byte(args):
    data = tempfile.mkdtemp(prefix="serve-bench-")
    try:
        seed_dir = os.path.join(data, "seed")
        plan_file = os.path.join(data, "plan.json")
        with open(plan_file, "w") as f:
            json.dump(layered_plan(20), f)
        subprocess.run([args.binary, "run", plan_file, "--out", seed_dir, "-q", "--sim-latency-ms", "0"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.remove(os.path.join(seed_dir, ".lock")) if os.path.exists(os.path.join(seed_dir, ".lock")) else None
        for i in range(args.runs):
            shutil.copytree(seed_dir, os.path.join(data, f"run-{i:04d}"))
        shutil.rmtree(seed_dir)
        os.remove(plan_file)
        proc, url = start_server(args.binary, data)
        try:
            middle = f"run-{args.runs // 2:04d}"
            for name, path in [(f"run page /runs/{middle}", f"runs/{middle}"), ("runs list page /", ""),
                               ("GET /api/runs (cold cache)", "api/runs")]:
                if name.startswith("GET"):
                    cold = ttfb(url + path, 1)[0]
                    print(f"{name}: {cold:.2f} ms", flush=True)
                    name = "GET /api/runs (warm)"
                med, p95 = ttfb(url + path, args.requests)
                print(f"{name}: median {med:.2f} ms, p95 {p95:.2f} ms over {args.requests} requests "
                      f"with {args.runs} runs in --data", flush=True)
        finally:
            stop_server(proc)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("sse")
    a.add_argument("binary")
    a.add_argument("--tasks", type=int, default=10000)
    a.add_argument("--subscribers", type=int, default=100)
    a.add_argument("--latency-ms", type=float, default=0)
    a.add_argument("--sigma", type=float, default=0, help="lognormal sigma of the latency (0: fixed)")
    a.add_argument("--pairs", type=int, default=3)
    a.add_argument("--client", choices=["asyncio", "curl"], default="asyncio",
                   help="asyncio: every subscriber in this process; curl: one process each")
    b = sub.add_parser("first-byte")
    b.add_argument("binary")
    b.add_argument("--runs", type=int, default=1000)
    b.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    {"sse": sse, "first-byte": first_byte}[args.cmd](args)


if __name__ == "__main__":
    main()
