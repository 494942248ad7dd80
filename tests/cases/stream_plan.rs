//! `research` executing its plan while the planner's answer streams (issue 16): tasks start
//! before the plan is complete, the result is the one `--no-stream-plan` gives, a repaired
//! plan keeps the work still valid and never starts a cycle, and the tolerant parsing (prose,
//! a ```json fence, the step format) works on the stream. Order is asserted on the events'
//! sequence in `events.jsonl`, never on wall-clock time.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases::aimock::{EVALUATION, aimock_requests, aimock_with};
use crate::support::{events, id_text, planwave, read_json, tempdir};

/// A simulated research whose planner streams (400 tokens/s: the answer takes about 2 s)
/// while subagents answer in about 50 ms.
fn research(out: &Path, extra: &[&str]) -> crate::support::Output {
    let r = planwave(["research", "Deep analysis of Tesla"])
        .out(out)
        .quiet()
        .opt("--max-rounds", "1")
        .opt("--sim-latency-ms", "50")
        .opt("--sim-sigma", "0")
        .opt("--sim-tokens-per-sec", "planner=400")
        .args(extra.iter().copied())
        .run();
    r.expect_ok();
    r
}

/// Position in the round's events of the first event of `kind` for `task` (any task when
/// `None`).
fn position(ev: &[Value], kind: &str, task: Option<&str>) -> Option<usize> {
    ev.iter()
        .position(|e| e["type"] == kind && task.is_none_or(|t| id_text(&e["task"]) == t))
}

/// Subagent model calls per task, from `run.json`.
fn subagent_calls(run: &Value, task: &str) -> usize {
    run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "subagent" && id_text(&c["task"]) == task)
        .count()
}

/// The position of `task`'s `task_started`, which must be there.
fn started(ev: &[Value], task: &str) -> usize {
    position(ev, "task_started", Some(task)).unwrap_or_else(|| panic!("task {task} never started"))
}

fn plan_completed(ev: &[Value]) -> &Value {
    let i = position(ev, "plan_completed", None).expect("plan_completed");
    &ev[i]
}

#[test]
fn tasks_start_while_the_plan_streams_and_the_result_is_the_same_as_without() {
    let dir = tempdir();
    let (streamed, whole) = (dir.path().join("s"), dir.path().join("w"));
    research(&streamed, &[]);
    research(&whole, &["--no-stream-plan"]);
    let ev = events(&streamed.join("rounds/1"));
    let completed = position(&ev, "plan_completed", None).expect("plan_completed");
    let first_start = position(&ev, "task_started", None).expect("a task started");
    assert!(
        first_start < completed,
        "a subagent started before the plan was complete"
    );
    // Each task object was received, in plan order, before any later one.
    let received: Vec<String> = ev
        .iter()
        .filter(|e| e["type"] == "plan_task_received")
        .map(|e| id_text(&e["task"]))
        .collect();
    assert_eq!(received, ["1", "2", "3", "4", "5"]);
    let tokens: Vec<u64> = ev
        .iter()
        .filter(|e| e["type"] == "plan_task_received")
        .filter_map(|e| e["token"].as_u64())
        .collect();
    assert_eq!(tokens.len(), 5);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    let done = plan_completed(&ev);
    assert_eq!(done["valid"], true);
    assert_eq!(done["tasks"], 5);
    // Without streaming nothing starts before the plan is complete.
    let ev_whole = events(&whole.join("rounds/1"));
    let planner_call = ev_whole
        .iter()
        .position(|e| e["type"] == "llm_call" && e["role"] == "planner")
        .expect("the planner's call");
    assert!(position(&ev_whole, "task_started", None).expect("started") > planner_call);
    assert_eq!(position(&ev_whole, "plan_task_received", None), None);
    // Same plan (each with its own identity), same sections, same report text but for the
    // timings.
    let plan = |dir: &Path| {
        let mut p = read_json(&dir.join("plan.json"));
        let about = p.as_object_mut().expect("plan object");
        assert!(about.remove("plan_id").is_some() && about.remove("created_at").is_some());
        p
    };
    assert_eq!(plan(&streamed), plan(&whole));
    for id in 1..=5 {
        let f = format!("sections/{id}.md");
        let a = std::fs::read_to_string(streamed.join(&f)).expect("section");
        let b = std::fs::read_to_string(whole.join(&f)).expect("section");
        assert_eq!(a, b, "{f}");
    }
    let untimed = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p.join("report.md"))
            .expect("report")
            .lines()
            .filter(|l| !l.contains(":done, t") && !l.starts_with("| Makespan"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(untimed(&streamed), untimed(&whole));
    let (a, b) = (
        read_json(&streamed.join("run.json")),
        read_json(&whole.join("run.json")),
    );
    assert_eq!(a["stats"]["usage"], b["stats"]["usage"]);
    assert_eq!(
        a["calls"].as_array().map(Vec::len),
        b["calls"].as_array().map(Vec::len)
    );
    for id in ["1", "2", "3", "4", "5"] {
        assert_eq!(subagent_calls(&a, id), 1, "task {id}");
    }
}

#[test]
fn a_repaired_plan_keeps_the_work_still_valid_and_never_starts_a_cycle() {
    // The first answer makes task 1 depend on task 5, closing 1 -> 4 -> 5 -> 1: tasks 2 and
    // 3 start while it streams, the cycle's tasks never do; the repair keeps 2 and 3.
    let dir = tempdir();
    let out = dir.path().join("cycle");
    research(&out, &["--sim-planner-faults", "cycle"]);
    let ev = events(&out.join("rounds/1"));
    let completed = position(&ev, "plan_completed", None).expect("plan_completed");
    let done = &ev[completed];
    assert_eq!(done["valid"], false);
    assert!(
        done["problems"][0]
            .as_str()
            .unwrap_or("")
            .starts_with("cycle"),
        "{done}"
    );
    assert_eq!(done["kept"], json!([2, 3]));
    for id in ["2", "3"] {
        assert!(started(&ev, id) < completed, "{id}");
    }
    for id in ["1", "4", "5"] {
        assert!(started(&ev, id) > completed, "{id}");
    }
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    // Kept tasks were not sent to the model again; every task ran exactly once.
    for id in ["1", "2", "3", "4", "5"] {
        assert_eq!(subagent_calls(&run, id), 1, "task {id}");
    }
    assert_eq!(
        run["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .filter(|c| c["role"] == "planner")
            .count(),
        2,
        "the answer and its repair"
    );

    // An unknown dependency: task 3 (and 5, which needs it) wait; 1, 2 and 4 run and are kept.
    let out = dir.path().join("unknown");
    research(&out, &["--sim-planner-faults", "unknown-dep"]);
    let ev = events(&out.join("rounds/1"));
    let completed = position(&ev, "plan_completed", None).expect("plan_completed");
    assert_eq!(ev[completed]["kept"], json!([1, 2, 4]));
    for id in ["3", "5"] {
        assert!(started(&ev, id) > completed, "{id}");
    }
    let run = read_json(&out.join("run.json"));
    for id in ["1", "2", "3", "4", "5"] {
        assert_eq!(subagent_calls(&run, id), 1, "task {id}");
    }
}

/// aimock streaming `answer` for the planner in chunks of 24 characters, 15 ms apart.
fn streaming_planner(
    dir: &Path,
    marker: &str,
    answer: &str,
) -> Option<(String, crate::support::ChildGuard)> {
    aimock_with(
        dir,
        json!([
            {"match": {"userMessage": "Evaluate the round above"}, "response": {"content": EVALUATION}},
            {"match": {"userMessage": "Reflect on the round"}, "response": {"content": r#"{"root_causes": [], "should_replan": false}"#}},
            {"match": {"userMessage": marker}, "response": {"content": answer}, "chunkSize": 24, "latency": 15},
            {"match": {}, "response": {"content": "## Section\n\nRevenue grew 12% in 2024 (source: annual report)."}}
        ]),
    )
}

/// The fenced plan of three tasks with its topic before (`topic_first`) or after its tasks.
fn fenced_plan(topic_first: bool) -> String {
    let topic = r#""topic": "Acme review", "objectives": ["understand Acme"]"#;
    let tasks = r#""tasks": [
    {"id": 1, "description": "Acme business model", "dependencies": []},
    {"id": 2, "description": "Acme finances", "dependencies": []},
    {"id": 3, "description": "Acme outlook", "dependencies": [1, 2]}
  ]"#;
    let body = if topic_first {
        format!("{{\n  {topic},\n  {tasks}\n}}")
    } else {
        format!("{{\n  {tasks},\n  {topic}\n}}")
    };
    format!(
        "Here is the plan you asked for.\n\n```json\n{body}\n```\nIt covers the business first."
    )
}

#[test]
fn prose_and_a_json_fence_around_a_streamed_plan_over_http() {
    let dir = tempdir();
    let Some((base, _server)) =
        streaming_planner(dir.path(), "plan-stream-fence", &fenced_plan(true))
    else {
        return;
    };
    let out = dir.path().join("r");
    planwave(["research", "plan-stream-fence: review Acme"])
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .quiet()
        .run()
        .expect_ok();
    let ev = events(&out.join("rounds/1"));
    let completed = position(&ev, "plan_completed", None).expect("plan_completed");
    assert_eq!(ev[completed]["valid"], true);
    assert!(
        started(&ev, "1") < completed,
        "task 1 started while the fenced answer was still streaming"
    );
    assert_eq!(
        ev[completed]["kept"]
            .as_array()
            .map(|k| k.contains(&json!(1))),
        Some(true),
        "{}",
        ev[completed]
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    // The planner's request asked for a stream, and every task was asked for once.
    let planner_request = aimock_requests(&base)
        .into_iter()
        .find(|r| r["body"].to_string().contains("plan-stream-fence"))
        .expect("the planner's request");
    assert_eq!(planner_request["body"]["stream"], true, "{planner_request}");
    for id in ["1", "2", "3"] {
        assert_eq!(subagent_calls(&run, id), 1, "task {id}");
    }
}

#[test]
fn tasks_started_before_the_topic_was_known_run_again() {
    // The topic comes after the task array: the tasks that started early were told the goal
    // as their topic, so their work cannot stand for the final plan's. They are stopped (or
    // discarded) and run again; the result is the final plan's.
    let dir = tempdir();
    let Some((base, _server)) =
        streaming_planner(dir.path(), "plan-stream-late", &fenced_plan(false))
    else {
        return;
    };
    let out = dir.path().join("r");
    planwave(["research", "plan-stream-late: review Acme"])
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .quiet()
        .run()
        .expect_ok();
    let ev = events(&out.join("rounds/1"));
    let completed = position(&ev, "plan_completed", None).expect("plan_completed");
    let done = &ev[completed];
    assert!(started(&ev, "1") < completed);
    assert_eq!(done.get("kept"), None, "{done}");
    let mut dropped: Vec<String> = ["cancelled", "discarded"]
        .iter()
        .flat_map(|k| done[*k].as_array().cloned().unwrap_or_default())
        .map(|v| id_text(&v))
        .collect();
    dropped.sort();
    assert_eq!(dropped, ["1", "2"], "{done}");
    // Each dropped task started again after the plan completed, and completed.
    for id in ["1", "2"] {
        assert!(
            ev[completed..]
                .iter()
                .any(|e| e["type"] == "task_started" && id_text(&e["task"]) == id),
            "{id}"
        );
    }
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    assert_eq!(read_json(&out.join("plan.json"))["topic"], "Acme review");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.starts_with("# Acme review\n"), "{report}");
}

#[test]
fn a_step_plan_streams_too() {
    let dir = tempdir();
    let plan = json!({"goal": "Acme in two steps", "steps": [
        {"step_id": "facts", "description": "Collect Acme facts", "tool": "llm_call", "params": {"prompt": "Facts about Acme"}, "depends_on": []},
        {"step_id": "answer", "description": "Answer about Acme", "tool": "llm_call", "params": {"prompt": "Use {{facts.result}}"}, "depends_on": ["facts"]}
    ]});
    let answer = format!(
        "```json\n{}\n```",
        serde_json::to_string_pretty(&plan).expect("json")
    );
    let Some((base, _server)) = streaming_planner(dir.path(), "plan-stream-steps", &answer) else {
        return;
    };
    let out = dir.path().join("r");
    planwave(["research", "plan-stream-steps: Acme"])
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .opt("--plan-format", "steps")
        .quiet()
        .run()
        .expect_ok();
    let ev = events(&out.join("rounds/1"));
    let completed = position(&ev, "plan_completed", None).expect("plan_completed");
    assert_eq!(ev[completed]["valid"], true, "{}", ev[completed]);
    assert!(
        position(&ev, "plan_task_received", Some("facts")).expect("facts received") < completed
    );
    assert!(started(&ev, "facts") < completed);
    let saved = read_json(&out.join("plan.json"));
    assert_eq!(saved["format"], "steps");
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(subagent_calls(&run, "facts"), 1);
}
