//! A tool step's structured result reaches later steps as the first pass gave it, whatever
//! happened in between (issue 36): after a replan from the failure point, after `kill -9`
//! and `resume` (and a journal written before results were kept still resumes, reading the
//! section text as before), and when a streamed plan grows after the step completed. And
//! offline, a complete replan of a step plan replaces the tools that failed.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases::aimock::answer_request;
use crate::cases::aimock::{EVALUATION, aimock_with};
use crate::cases::step_recovery::{ids, tools_called};
use crate::cases::steps::crashy_config;
use crate::support::{events, id_text, planwave, read_json, task, tempdir, write_json};

/// The structured content the Python SDK gives for `hello team`, as `{{greet.result}}`
/// puts it in a string.
const GREETING: &str = r#"{"result":"hello team"}"#;

/// The `name` argument of `t`'s first tool call.
fn name_arg(t: &Value) -> &str {
    t["tool_calls"][0]["args"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("no name argument: {t}"))
}

#[test]
fn after_a_replan_a_kept_tool_step_gives_later_steps_its_result_as_the_first_pass_did() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // greet and echo complete (echo reads greet's result in the first pass), fetch fails
    // for good and blocks answer: a replan from the failure point keeps greet and echo.
    let first = json!({"goal": "Greet the team", "steps": [
        {"step_id": "greet", "description": "Greet", "tool": "hello", "params": {"name": "team"}},
        {"step_id": "echo", "description": "Echo the greeting", "tool": "hello",
         "params": {"name": "got {{greet.result}}"}, "dependencies": ["greet"]},
        {"step_id": "fetch", "description": "Fetch the data", "tool": "broken",
         "params": {"message": "x"}},
        {"step_id": "answer", "description": "Answer", "tool": "llm_call",
         "params": {"prompt": "Answer from {{greet.result}} and {{fetch.result}}"},
         "dependencies": ["greet", "fetch"]}]});
    let replacement = json!({"steps": [
        {"step_id": "fetch_alt", "description": "Ask again", "tool": "hello",
         "params": {"name": "got {{greet.result}}"}, "dependencies": ["greet"]},
        {"step_id": "answer", "description": "Answer", "tool": "llm_call",
         "params": {"prompt": "Answer from {{greet.result}} and {{fetch_alt.result}}"},
         "dependencies": ["greet", "fetch_alt"]}]});
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "# Steps to replace"},
             "response": {"content": replacement.to_string()}},
            {"match": {"userMessage": "Evaluate the round above"},
             "response": {"content": EVALUATION}},
            {"match": {"userMessage": "# Available tools"},
             "response": {"content": first.to_string()}},
            {"match": {}, "response": {"content": "FINAL-ANSWER"}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("out");
    planwave(["research", "Greet the team"])
        .out(&out)
        .quiet()
        .opt("--plan-format", "steps")
        .opt("--mcp-config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["rounds"][0]["passes"][0]["recovery"], "replan_from_failure",
        "{run}"
    );
    assert_eq!(ids(&run), ["greet", "echo", "fetch_alt", "answer"]);
    // The first pass read greet's result as the tool's structured content; the replacement
    // step and the final llm_call, after the replan, read exactly the same.
    let first_pass = name_arg(task(&run, "echo"));
    assert_eq!(first_pass, format!("got {GREETING}"));
    assert_eq!(
        tools_called(task(&run, "fetch_alt")),
        [("hello".to_owned(), "ok".to_owned())]
    );
    assert_eq!(name_arg(task(&run, "fetch_alt")), first_pass);
    let answer = answer_request(&base);
    assert!(
        answer.starts_with(&format!(
            "Answer from <data source=\"step greet\">\n{GREETING}\n</data> and "
        )),
        "{answer}"
    );
    // The kept step's record holds its structured result.
    assert_eq!(
        task(&run, "greet")["result"],
        json!({"result": "hello team"})
    );
}

/// A step plan whose `echo` step reads `greet`'s result, and waits for `wait` (an
/// `llm_call` the simulator answers after the latency file's delay for it).
fn waiting_steps(dir: &Path) -> std::path::PathBuf {
    write_json(
        dir,
        "steps.json",
        &json!({"goal": "Greet, think, echo", "steps": [
            {"step_id": "greet", "description": "Greet", "tool": "hello",
             "params": {"name": "team"}},
            {"step_id": "wait", "description": "Think it over", "tool": "llm_call",
             "params": {"prompt": "Think it over"}},
            {"step_id": "echo", "description": "Echo the greeting", "tool": "hello",
             "params": {"name": "got {{greet.result}}"}, "dependencies": ["greet", "wait"]}]}),
    )
}

/// Removes the `result` field from every `task_completed` line: the journal as a version
/// from before results were kept wrote it.
fn strip_results(journal: &Path) {
    let text = std::fs::read_to_string(journal).expect("events.jsonl");
    let mut stripped = String::new();
    for line in text.lines() {
        match serde_json::from_str::<Value>(line) {
            Ok(mut v) if v["type"] == "task_completed" => {
                if let Some(o) = v.as_object_mut() {
                    o.remove("result");
                }
                stripped.push_str(&v.to_string());
            }
            _ => stripped.push_str(line),
        }
        stripped.push('\n');
    }
    std::fs::write(journal, stripped).expect("events.jsonl");
}

#[test]
fn a_resumed_step_plan_gives_later_steps_the_structured_result_and_old_journals_still_resume() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let plan = waiting_steps(dir.path());
    let latency = write_json(dir.path(), "latency.json", &json!({"wait": 600000}));
    let start = |out: &Path| {
        planwave(["run"])
            .arg(&plan)
            .out(out)
            .opt("--llm", "sim")
            .opt("--sim-latency-ms", "0")
            .opt("--sim-latency-file", &latency)
            .opt("--mcp-config", &cfg)
    };
    // Killed once greet's completion is durable, while wait hangs.
    let out = dir.path().join("killed");
    let mut child = start(&out).spawn();
    child.wait_for("task greet completed in ", 1);
    child.kill_9();
    std::fs::write(&latency, "{}").expect("latency");
    let completed: Vec<Value> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "task_completed")
        .collect();
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!(id_text(&completed[0]["task"]), "greet");

    // The same killed run as an earlier version journaled it: no results.
    let old = dir.path().join("old");
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(&out)
        .arg(&old)
        .status()
        .expect("cp");
    assert!(copied.success());
    strip_results(&old.join("events.jsonl"));

    // The reference: the same plan, never interrupted.
    let reference = dir.path().join("reference");
    start(&reference).quiet().run().expect_ok();
    let first_pass = read_json(&reference.join("run.json"));
    assert_eq!(
        name_arg(task(&first_pass, "echo")),
        format!("got {GREETING}")
    );

    for (resumed, expected) in [
        (&out, format!("got {GREETING}")),
        // An old journal still resumes: the section is read as the result, as before.
        (&old, "got hello team".to_owned()),
    ] {
        let r = planwave(["resume"]).arg(resumed).quiet().run();
        r.expect_ok();
        assert!(
            r.stdout.contains("1 of 3 tasks already completed"),
            "{}",
            r.stdout
        );
        let run = read_json(&resumed.join("run.json"));
        assert_eq!(run["status"], "completed", "{run}");
        // greet was not called again; echo read its result as the first pass did.
        assert_eq!(task(&run, "greet")["tool_calls"], Value::Null, "{run}");
        assert_eq!(
            name_arg(task(&run, "echo")),
            expected,
            "{}",
            resumed.display()
        );
    }
    // The completion's journal line carries the structured result.
    assert_eq!(completed[0]["result"], json!({"result": "hello team"}));
}

#[test]
fn a_streamed_step_plan_gives_a_step_that_arrives_later_the_structured_result() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // greet is complete early in the stream and runs while the rest streams; pad's long
    // prompt keeps the stream going, so echo, which reads greet's result, arrives after
    // greet completed (the plan grows under a running supervisor).
    let pad = "Summarise the greeting in one line. ".repeat(60);
    let plan = json!({"goal": "Greet and echo", "steps": [
        {"step_id": "greet", "description": "Greet", "tool": "hello", "params": {"name": "team"}},
        {"step_id": "pad", "description": "Summarise", "tool": "llm_call",
         "params": {"prompt": pad}},
        {"step_id": "echo", "description": "Echo the greeting", "tool": "hello",
         "params": {"name": "got {{greet.result}}"}, "dependencies": ["greet"]}]});
    let streamed = format!(
        "```json\n{}\n```",
        serde_json::to_string_pretty(&plan).expect("json")
    );
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "Evaluate the round above"}, "response": {"content": EVALUATION}},
            {"match": {"userMessage": "plan-stream-results"}, "response": {"content": streamed},
             "chunkSize": 24, "latency": 15},
            {"match": {}, "response": {"content": "A one-line summary."}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("r");
    planwave(["research", "plan-stream-results: greet and echo"])
        .out(&out)
        .quiet()
        .opt("--plan-format", "steps")
        .opt("--mcp-config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .run()
        .expect_ok();
    let ev = events(&out.join("rounds/1"));
    let at = |kind: &str, id: &str| {
        ev.iter()
            .position(|e| e["type"] == kind && id_text(&e["task"]) == id)
            .unwrap_or_else(|| panic!("no {kind} of {id}"))
    };
    // The case under test: greet completed before echo was part of the plan.
    assert!(
        at("task_completed", "greet") < at("plan_task_received", "echo"),
        "echo arrived before greet completed"
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(name_arg(task(&run, "echo")), format!("got {GREETING}"));
}

#[test]
fn offline_a_complete_step_replan_replaces_the_tools_that_failed() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // The simulated planner first uses the first two tools the goal names, broken and
    // flaky (it fails its first 22 calls): both fail, nothing completes, so the round
    // replans completely, told which tools failed.
    let out = dir.path().join("sim");
    planwave([
        "research",
        "Fetch with broken, then flaky, else greet with hello",
    ])
    .out(&out)
    .instant()
    .quiet()
    .opt("--plan-format", "steps")
    .opt("--mcp-config", &cfg)
    .opt("--max-rounds", "1")
    .run()
    .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["rounds"][0]["passes"][0]["recovery"], "complete_replan",
        "{run}"
    );
    // The new plan calls the tool that was left, not the ones that failed.
    let plan = read_json(&out.join("plan.json"));
    let tools: Vec<&str> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["tool"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tools, ["hello", "llm_call"], "{plan}");
    let hello = task(&run, "step_1");
    assert_eq!(tools_called(hello), [("hello".to_owned(), "ok".to_owned())]);
    // The replacement's result is in the final answer.
    let output = hello["tool_calls"][0]["output"]
        .as_str()
        .expect("hello's output");
    assert!(output.starts_with("hello "), "{output}");
    let answer = run["answer"].as_str().expect("answer");
    assert!(answer.contains(output), "{output:?} not in:\n{answer}");
}
