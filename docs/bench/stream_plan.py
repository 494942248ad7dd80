#!/usr/bin/env python3
"""Issue 16 figure: one research round with a 12-task plan whose planner answer streams at
about 40 tokens/s, subagents with lognormal latency (mean 3 s), streaming against
--no-stream-plan. The model is aimock (npm, installed by .ci/peers) over HTTP: the planner's
answer is sent in chunks of 4 characters 25 ms apart (160 characters/s, about 40 tokens/s at
4 characters a token); each subagent answer comes in one chunk after its task's latency (aimock waits a third of it before each
of the answer's three SSE events),
drawn once (seed 16) from a lognormal with mean 3 s and sigma 0.5. Evaluation, reflection and
the summary answer at once. Times come from the round's events.jsonl.

usage: stream_plan.py PLANWAVE_BINARY PEERS_DIR WORK_DIR
"""
import json, math, os, random, re, subprocess, sys, time
from datetime import datetime

binary, peers, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
random.seed(16)
SIGMA = 0.5
MU = math.log(3000) - SIGMA**2 / 2  # mean 3000 ms

# 12 tasks: 8 independent chapters, 3 syntheses of two or three chapters each, 1 conclusion.
tasks = [{"id": i, "description": f"Chapter {i}: aspect {i} of Acme", "dependencies": []} for i in range(1, 9)]
tasks += [
    {"id": 9, "description": "Synthesis A of chapters 1-3", "dependencies": [1, 2, 3]},
    {"id": 10, "description": "Synthesis B of chapters 4-6", "dependencies": [4, 5, 6]},
    {"id": 11, "description": "Synthesis C of chapters 7-8", "dependencies": [7, 8]},
    {"id": 12, "description": "Conclusion and recommendation", "dependencies": [9, 10, 11]},
]
for t in tasks:
    t["hints"] = {"data_needs": ["figures", "sources"], "key_questions": [f"What matters most in {t['description'].lower()}?"], "suggested_tools": []}
body = ",\n    ".join(json.dumps(t, ensure_ascii=False) for t in tasks)
plan = ('{\n  "research_type": "company",\n  "topic": "Acme review",\n  "objectives": ["understand Acme"],\n'
        f'  "tasks": [\n    {body}\n  ]\n}}')
answer = "Here is the plan:\n```json\n" + plan + "\n```"
latency = {t["id"]: round(random.lognormvariate(MU, SIGMA)) for t in tasks}

EVAL = '{"overall_score": 90, "is_successful": true, "dimensions": {"completeness": 100, "correctness": 97, "efficiency": 85, "reliability": 90}, "successes": ["all"], "failures": [], "improvement_suggestions": []}'
REFL = '{"reflection_id": "r", "root_causes": [], "incorrect_assumptions": [], "alternative_approaches": [], "optimization_suggestions": [], "lessons_learned": [], "should_replan": false}'
fixtures = [
    {"match": {"userMessage": "Evaluate the round above"}, "response": {"content": EVAL}},
    {"match": {"userMessage": "Reflect on the round"}, "response": {"content": REFL}},
    {"match": {"userMessage": "plan-bench-12"}, "response": {"content": answer}, "chunkSize": 4, "latency": 25},
]
# Longest id first: "executing task 1 of" must not catch task 12's prompt (it cannot: " of"
# follows the id), but keep the order obvious anyway.
for t in sorted(tasks, key=lambda t: -t["id"]):
    fixtures.append({"match": {"userMessage": f"You are executing task {t['id']} of"},
                     "response": {"content": f"## {t['description']}\n\nRevenue grew 12% in 2024 (source: annual report)."},
                     # aimock waits `latency` before each SSE event of an answer, and a
                     # one-chunk answer has three (role, content, finish).
                     "chunkSize": 100000, "latency": round(latency[t["id"]] / 3)})
fixtures.append({"match": {}, "response": {"content": "Acme grew."}})
fx = os.path.join(work, "fixtures.json")
json.dump({"fixtures": fixtures}, open(fx, "w"))

cli = os.path.join(peers, "npm/node_modules/@copilotkit/aimock/dist/cli.js")
mock = subprocess.Popen(["node", cli, "--port", "0", "--host", "127.0.0.1", "--log-level", "info", "--fixtures", fx],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
try:
    base = None
    for line in mock.stdout:
        m = re.search(r"http://127\.0\.0\.1:\d+", line)
        if m:
            base = m.group(0) + "/v1"
            break
    assert base, "aimock did not start"

    def ts(e):
        return datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()

    def run(name, extra):
        out = os.path.join(work, name)
        subprocess.run([binary, "research", "plan-bench-12: review Acme", "--out", out, "--force",
                        "--llm-base-url", base, "--model", "gpt-4o", "--max-rounds", "1", "-q"] + extra,
                       check=True, stdout=subprocess.DEVNULL)
        ev = [json.loads(l) for l in open(os.path.join(out, "rounds/1/events.jsonl"))]
        t0 = ts(next(e for e in ev if e["type"] == "round_started"))
        first = ts(next(e for e in ev if e["type"] == "task_started")) - t0
        planned = max(ts(e) for e in ev if e["type"] == "llm_call" and e.get("role") == "planner") - t0
        ran = ts(next(e for e in ev if e["type"] == "run_finished")) - t0
        round_end = ts(next(e for e in ev if e["type"] == "round_finished")) - t0
        run_json = json.load(open(os.path.join(out, "run.json")))
        sub = [c for c in run_json["calls"] if c["role"] == "subagent"]
        return dict(first_start=first, plan_streamed=planned, run_finished=ran, round=round_end,
                    tasks=run_json["stats"]["tasks"], status=run_json["status"], subagent_calls=len(sub))

    streamed = run("streamed", [])
    whole = run("whole", ["--no-stream-plan"])
    print(json.dumps({"latency_ms": latency, "plan_chars": len(answer), "streamed": streamed, "whole": whole}, indent=1))
    print("round sooner by %.1f %%" % (100 * (1 - streamed["round"] / whole["round"])))
finally:
    mock.terminate()
    mock.wait()
