#!/usr/bin/env python3
"""Figures of the NATS queue path (docs/benchmarks.md), measured in one run.

usage: queue_bench.py PLANWAVE NATS_SERVER

1. overhead per job of the queue path against a local batch (zero latency);
2. makespan of a latency-bound batch on 3 workers against 1;
3. time from kill -9 of a worker to its job running again on another.
Everything on 127.0.0.1; every process started is killed at the end.
"""
import json, os, re, signal, socket, subprocess, sys, tempfile, threading, time

PW, NATS = sys.argv[1], sys.argv[2]
procs = []


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def start(args, **kw):
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, **kw); procs.append(p); return p


class Lines:
    """A process's stderr read on a thread; each line with its arrival time."""
    def __init__(self, proc):
        self.lines, self.proc = [], proc
        threading.Thread(target=self.read, daemon=True).start()
    def read(self):
        for raw in self.proc.stderr:
            self.lines.append((time.monotonic(), raw.decode(errors="replace").rstrip()))
    def wait_for(self, needle, n=1, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            hits = [t for t, l in self.lines if needle in l]
            if len(hits) >= n:
                return hits[n - 1]
            time.sleep(0.01)
        raise SystemExit(f"timed out waiting for {needle!r}")


def plan(p, n, chain):
    return {"research_type": "company", "topic": p, "objectives": ["know it"],
            "tasks": [{"id": f"{p}{i}", "description": f"part {i}",
                       "dependencies": [f"{p}{i-1}"] if chain and i > 1 else [],
                       "hints": {"key_questions": ["what?"]}} for i in range(1, n + 1)]}


def jobs_file(d, prefix, n, tasks, chain):
    path = os.path.join(d, f"{prefix}.jsonl")
    with open(path, "w") as f:
        for j in range(n):
            f.write(json.dumps({"id": f"{prefix}{j}", "plan": plan(f"{prefix}{j}t", tasks, chain)}) + "\n")
    return path


def model(sim):
    return ["--llm-base-url", sim, "--model", "planwave-sim-1", "--no-stream"]


def sim_server(latency_ms):
    p = start([PW, "sim-llm", "serve", "--addr", "127.0.0.1:0", "--latency-ms", str(latency_ms),
               "--sigma", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p.stdout.readline().decode().strip()


def status(url, name):
    out = subprocess.run([PW, "batch", "status", name, "--nats", url, "--json"],
                         capture_output=True, check=True).stdout
    return json.loads(out)


def wait_done(url, name, n, timeout=300):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if status(url, name)["counts"]["completed"] == n:
            return time.monotonic()
        time.sleep(0.05)
    raise SystemExit(f"batch {name} did not finish")


def span(lines):
    """First `job .. started` to last `job .. finished`, from the progress lines' own clock."""
    t = lambda l: float(re.match(r"\[\s*([\d.]+)s\]", l).group(1))
    started = [t(l) for _, l in lines if re.search(r"\] job \S+ started", l)]
    finished = [t(l) for _, l in lines if re.search(r"\] job \S+ finished", l)]
    return max(finished) - min(started)


def worker(url, sim, d, name, extra):
    p = start([PW, "worker", "--nats", url, *model(sim), "--name", name,
               "--cache", os.path.join(d, "cache-" + name), *extra],
              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines = Lines(p); lines.wait_for("waiting for jobs"); return p, lines


def main():
    d = tempfile.mkdtemp(prefix="planwave-queue-bench-")
    port, mon = free_port(), free_port()
    start([NATS, "-js", "-sd", os.path.join(d, "js"), "-a", "127.0.0.1", "-p", str(port),
           "-m", str(mon)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close(); break
        except OSError:
            time.sleep(0.05)
    url = f"nats://127.0.0.1:{port}"

    # 1. overhead per job, zero latency
    n = 200
    sim0 = sim_server(0)
    jobs = jobs_file(d, "o", n, 2, True)
    local = subprocess.run([PW, "batch", jobs, "--out", os.path.join(d, "local"), "--jobs", "4",
                            *model(sim0)], capture_output=True)
    local_lines = [(0, l) for l in local.stderr.decode().splitlines()]
    t_local = span(local_lines)
    w, wl = worker(url, sim0, d, "o", ["--jobs", "4"])
    subprocess.run([PW, "batch", jobs, "--nats", url, "--batch", "overhead"], check=True,
                   capture_output=True)
    wait_done(url, "overhead", n)
    wl.wait_for("] job o199 finished")
    t_queue = span(wl.lines)
    w.send_signal(signal.SIGTERM); w.wait(30)
    print(f"1. {n} jobs x 2 tasks, zero latency, --jobs 4: local batch {t_local:.2f} s, "
          f"queue (1 worker) {t_queue:.2f} s, overhead {(t_queue - t_local) / n * 1000:.1f} ms/job")

    # 2. 3 workers against 1, latency-bound
    sim2 = sim_server(2000)
    res = {}
    for k in (1, 3):
        ws = [worker(url, sim2, d, f"m{k}-{i}", ["--jobs", "2", "--max-subagents", "2"])
              for i in range(k)]
        jobs = jobs_file(d, f"m{k}x", 6, 4, False)
        t0 = time.monotonic()
        subprocess.run([PW, "batch", jobs, "--nats", url, "--batch", f"makespan{k}"],
                       check=True, capture_output=True)
        res[k] = wait_done(url, f"makespan{k}", 6) - t0
        for p, _ in ws:
            p.send_signal(signal.SIGTERM); p.wait(30)
    print(f"2. 6 jobs x 4 tasks, latency 2 s, --max-subagents 2 per worker: 1 worker "
          f"{res[1]:.1f} s, 3 workers {res[3]:.1f} s, ratio {res[3] / res[1]:.2f}")

    # 3. kill -9 to running again elsewhere
    sim3 = sim_server(500)
    a, al = worker(url, sim3, d, "a", ["--jobs", "1", "--ack-wait", "2s"])
    jobs = jobs_file(d, "k", 1, 10, True)
    subprocess.run([PW, "batch", jobs, "--nats", url, "--batch", "kill"], check=True,
                   capture_output=True)
    al.wait_for("task k0t2 completed")
    b, bl = worker(url, sim3, d, "b", ["--jobs", "1", "--ack-wait", "2s"])
    t_kill = time.monotonic(); a.kill(); a.wait()
    t_again = bl.wait_for("running job k0 of batch kill (delivery 2)")
    print(f"3. ack-wait 2 s: kill -9 to the job running again on another worker "
          f"{t_again - t_kill:.2f} s")
    b.send_signal(signal.SIGTERM); b.wait(30)


try:
    main()
finally:
    for p in procs:
        if p.poll() is None:
            p.kill(); p.wait()
