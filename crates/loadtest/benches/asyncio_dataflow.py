"""The baseline for planwave's zero-latency throughput: a minimal asyncio dataflow loop.

One `asyncio.create_task` per task, started when its last prerequisite finishes; each task
"calls the model" (an `await asyncio.sleep(0)`: zero latency, one trip through the event
loop) and reports. Nothing else: no prompts, no records, no report. Shapes as `planwave
loadtest --shape wide|chain|layered` (layered: width, fan-in up to 3, seeded).

    python3 asyncio_dataflow.py wide 10000
    python3 asyncio_dataflow.py chain 5000
prints one JSON line: shape, tasks, seconds, tasks_per_sec.
"""

import asyncio
import json
import random
import sys
import time


def shape(kind, n, width=None, fan_in=3, seed=0):
    deps = [[] for _ in range(n)]
    if kind == "chain":
        for k in range(1, n):
            deps[k] = [k - 1]
    elif kind == "layered":
        rng = random.Random(seed)
        w = width or max(1, int(n ** 0.5))
        for k in range(w, n):
            prev = (k // w - 1) * w
            deps[k] = rng.sample(range(prev, prev + w), rng.randint(1, min(fan_in, w)))
    return deps


async def run(deps):
    n = len(deps)
    dependents = [[] for _ in range(n)]
    waiting = [len(d) for d in deps]
    for k, ds in enumerate(deps):
        for d in ds:
            dependents[d].append(k)
    done = asyncio.get_running_loop().create_future()
    remaining = [n]

    async def task(k):
        await asyncio.sleep(0)  # the model call, at zero latency
        for m in dependents[k]:
            waiting[m] -= 1
            if waiting[m] == 0:
                asyncio.create_task(task(m))
        remaining[0] -= 1
        if remaining[0] == 0:
            done.set_result(None)

    for k in range(n):
        if waiting[k] == 0:
            asyncio.create_task(task(k))
    await done


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    deps = shape(kind, n)
    start = time.perf_counter()
    asyncio.run(run(deps))
    secs = time.perf_counter() - start
    print(json.dumps({"shape": kind, "tasks": n, "seconds": secs, "tasks_per_sec": n / secs}))


if __name__ == "__main__":
    main()
