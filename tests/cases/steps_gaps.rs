//! The last gaps of issue 36, through the real binary: a step plan's recovery inside
//! `research` (from the failure point, and complete), one output instruction per tool
//! protocol in the subagent's request, and the duration `plan` and `waves` estimate from the
//! call times a run left beside the plan cache.

use serde_json::{Value, json};

use crate::cases::aimock::{EVALUATION, aimock_requests, aimock_with};
use crate::cases::steps::crashy_config;
use crate::support::{planwave, read_json, task, tempdir, write_json};

pub(crate) fn ids(run: &Value) -> Vec<String> {
    run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| crate::support::id_text(&t["id"]))
        .collect()
}

pub(crate) fn tools_called(t: &Value) -> Vec<(String, String)> {
    t["tool_calls"]
        .as_array()
        .expect("tool calls")
        .iter()
        .map(|c| {
            (
                c["tool"].as_str().unwrap_or("").to_owned(),
                c["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The text of every message of a request aimock received, one string.
fn messages_text(request: &Value) -> String {
    let mut text = String::new();
    let messages = request["body"]["messages"]
        .as_array()
        .or_else(|| request["messages"].as_array());
    for m in messages.into_iter().flatten() {
        text.push_str(m["content"].as_str().unwrap_or(""));
        text.push('\n');
    }
    text
}

/// The first request aimock got whose messages contain every one of `needles`.
fn request_with(base: &str, needles: &[&str]) -> String {
    let texts: Vec<String> = aimock_requests(base).iter().map(messages_text).collect();
    match texts.iter().find(|t| needles.iter().all(|n| t.contains(n))) {
        Some(t) => t.clone(),
        None => panic!("no request with {needles:?}; the requests:\n{texts:#?}"),
    }
}

/// The final `llm_call`'s request: the one whose prompt (its only message) opens with
/// "Answer from ".
pub(crate) fn answer_request(base: &str) -> String {
    let texts: Vec<String> = aimock_requests(base).iter().map(messages_text).collect();
    match texts.iter().find(|t| t.starts_with("Answer from ")) {
        Some(t) => t.clone(),
        None => panic!("no answer step's request; the requests:\n{texts:#?}"),
    }
}

/// A model answering the planner with `first`, a step replan with `replacement`, a complete
/// replan (the step planner told why the plan failed) with `replanned`, the evaluator with a
/// score that ends the loop, and everything else (the answer step, the summary) with
/// `FINAL-ANSWER`.
fn model(
    dir: &std::path::Path,
    first: &Value,
    replacement: &Value,
    replanned: &Value,
) -> Option<(String, crate::support::ChildGuard)> {
    // The step replan's first answer names a tool no server has: it is checked against the
    // catalogue and sent back with the problem, and the repaired answer is `replacement`.
    let invalid = json!({"steps": [{"step_id": "fetch_alt", "description": "Fetch",
                                    "tool": "no_such_tool", "params": {}}]});
    aimock_with(
        dir,
        json!([
            {"match": {"userMessage": "replacement steps you wrote above"},
             "response": {"content": replacement.to_string()}},
            {"match": {"userMessage": "# Steps to replace"},
             "response": {"content": invalid.to_string()}},
            {"match": {"userMessage": "previous plan failed"},
             "response": {"content": replanned.to_string()}},
            {"match": {"userMessage": "Evaluate the round above"},
             "response": {"content": EVALUATION}},
            {"match": {"userMessage": "# Available tools"},
             "response": {"content": first.to_string()}},
            {"match": {}, "response": {"content": "FINAL-ANSWER"}}
        ]),
    )
}

fn research(goal: &str, out: &std::path::Path, cfg: &std::path::Path, base: &str) {
    planwave(["research", goal])
        .out(out)
        .quiet()
        .opt("--plan-format", "steps")
        .opt("--mcp-config", cfg)
        .opt("--llm-base-url", base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .run()
        .expect_ok();
}

#[test]
fn research_replaces_a_failed_tool_step_from_the_failure_point() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // greet completes, fetch fails for good (broken always reports an error), answer is
    // blocked: one failure of three, so the round replans from the failure point.
    let first = json!({"goal": "Greet the team", "steps": [
        {"step_id": "greet", "description": "Greet", "tool": "hello", "params": {"name": "team"}},
        {"step_id": "fetch", "description": "Fetch the data", "tool": "broken",
         "params": {"message": "x"}},
        {"step_id": "answer", "description": "Answer", "tool": "llm_call",
         "params": {"prompt": "Answer from {{greet.result}} and {{fetch.result}}"},
         "dependencies": ["greet", "fetch"]}]});
    let replacement = json!({"steps": [
        {"step_id": "fetch_alt", "description": "Ask the data desk", "tool": "hello",
         "params": {"name": "data desk"}},
        {"step_id": "answer", "description": "Answer", "tool": "llm_call",
         "params": {"prompt": "Answer from {{greet.result}} and {{fetch_alt.result}}"},
         "dependencies": ["greet", "fetch_alt"]}]});
    let Some((base, _server)) = model(dir.path(), &first, &replacement, &json!({})) else {
        return;
    };
    let out = dir.path().join("partial");
    research("Greet the team", &out, &cfg, &base);

    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["rounds"][0]["passes"][0]["recovery"], "replan_from_failure",
        "{run}"
    );
    // The failed step was replaced by a step with another tool; the kept one was not rerun.
    assert_eq!(ids(&run), ["greet", "fetch_alt", "answer"]);
    assert_eq!(
        tools_called(task(&run, "fetch_alt")),
        [("hello".to_owned(), "ok".to_owned())]
    );
    assert_eq!(
        task(&run, "greet")["tool_calls"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(read_json(&out.join("plan.json"))["format"], "steps");
    // The replanner saw the catalogue with its schemas, the failed step's tool and error,
    // and the kept step's result.
    let asked = request_with(&base, &["# Steps to replace"]);
    for needle in [
        "`hello`",
        "input schema",
        "step fetch: Fetch the data (tool broken",
        "Error executing tool broken",
        "hello team",
    ] {
        assert!(asked.contains(needle), "{needle:?} not in:\n{asked}");
    }
    // The invalid first answer was checked against the catalogue and repaired.
    let repair = request_with(&base, &["replacement steps you wrote above"]);
    assert!(repair.contains("unknown tool no_such_tool"), "{repair}");
    let replan = read_json(&out.join("rounds/1/replan-pass-2.json"));
    assert_eq!(
        replan["attempts"].as_array().map(Vec::len),
        Some(2),
        "{replan}"
    );
    // The replacement's result reached the final llm_call (its prompt, references
    // resolved), and that step's answer is the run's. The kept step's result reads as the
    // tool's structured content, as the fresh one's does (steps_results.rs).
    let answer = answer_request(&base);
    assert!(
        answer.starts_with(r#"Answer from {"result":"hello team"} and "#)
            && answer.contains("hello data desk"),
        "{answer}"
    );
    assert_eq!(run["answer"], "FINAL-ANSWER", "{run}");
    // The report (and the page, which shows report.html) opens with that answer.
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("\n## Answer\n\nFINAL-ANSWER\n"), "{report}");
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in:\n{html}"))
    };
    assert!(at("<h2>Answer</h2>") < at("FINAL-ANSWER"));
    assert!(at("FINAL-ANSWER") < at("<h2>Executive summary</h2>"));
}

#[test]
fn research_on_the_simulator_replaces_a_failed_tool_step_with_one_that_worked() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // Offline: the simulated planner uses the tools the goal names (hello, then broken);
    // its replanner replaces the failed step with a tool a kept step used successfully.
    let out = dir.path().join("sim");
    planwave(["research", "Greet with hello, then fetch with broken"])
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
        run["rounds"][0]["passes"][0]["recovery"], "replan_from_failure",
        "{run}"
    );
    assert_eq!(ids(&run), ["step_1", "step_2_alt", "answer"]);
    assert_eq!(
        tools_called(task(&run, "step_2_alt")),
        [("hello".to_owned(), "ok".to_owned())]
    );
    let plan = read_json(&out.join("plan.json"));
    let answer = &plan["tasks"][2];
    assert_eq!(answer["tool"], "llm_call", "{plan}");
    assert_eq!(answer["dependencies"], json!(["step_1", "step_2_alt"]));
    assert!(
        answer["params"]["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("{{step_2_alt.result}}")),
        "{answer}"
    );
    assert_eq!(task(&run, "answer")["status"], "completed", "{run}");
}

#[test]
fn research_replans_a_failed_step_plan_completely_in_steps() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // Nothing completes (fetch fails for good, answer is blocked): a complete replan.
    let first = json!({"goal": "Fetch the data", "steps": [
        {"step_id": "fetch", "description": "Fetch the data", "tool": "broken",
         "params": {"message": "x"}},
        {"step_id": "answer", "description": "Answer", "tool": "llm_call",
         "params": {"prompt": "Answer from {{fetch.result}}"}, "dependencies": ["fetch"]}]});
    let replanned = json!({"goal": "Fetch the data", "steps": [
        {"step_id": "greet", "description": "Ask the data desk", "tool": "hello",
         "params": {"name": "data desk"}},
        {"step_id": "answer", "description": "Answer", "tool": "llm_call",
         "params": {"prompt": "Answer from {{greet.result}}"}, "dependencies": ["greet"]}]});
    let Some((base, _server)) = model(dir.path(), &first, &replanned, &replanned) else {
        return;
    };
    let out = dir.path().join("complete");
    research("Fetch the data", &out, &cfg, &base);

    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["rounds"][0]["passes"][0]["recovery"], "complete_replan",
        "{run}"
    );
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(plan["format"], "steps", "{plan}");
    let tools: Vec<&str> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["tool"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tools, ["hello", "llm_call"], "{plan}");
    assert_eq!(
        tools_called(task(&run, "greet")),
        [("hello".to_owned(), "ok".to_owned())]
    );
    // The replanner was asked for steps, with the catalogue (schemas included) and the
    // failed step's tool and error.
    let asked = aimock_requests(&base)
        .iter()
        .map(messages_text)
        .find(|t| t.contains("previous plan failed") || t.contains("# Steps to replace"))
        .expect("the complete replan's request");
    for needle in [
        "input schema",
        "hello",
        "tool broken",
        "Error executing tool broken",
    ] {
        assert!(asked.contains(needle), "{needle:?} not in:\n{asked}");
    }
    let answer = answer_request(&base);
    assert!(answer.contains("hello data desk"), "{answer}");
    assert_eq!(run["answer"], "FINAL-ANSWER", "{run}");
}

/// The subagent's request of a one-task research plan whose task suggests `hello`, run
/// under `protocol` against a model that answers with a plain section.
fn subagent_request(dir: &std::path::Path, protocol: &str) -> Option<String> {
    std::fs::create_dir_all(dir).expect("mkdir");
    let cfg = crashy_config(dir)?;
    let plan = write_json(
        dir,
        &format!("{protocol}.json"),
        &json!({"topic": "Team greeting", "objectives": ["greet"], "tasks": [
            {"id": 1, "description": "Greet the team", "dependencies": [],
             "hints": {"suggested_tools": ["hello"]}}]}),
    );
    let fixtures =
        json!([{"match": {}, "response": {"content": "The team was greeted (ONE-FORMAT)."}}]);
    let (base, _server) = aimock_with(dir, fixtures)?;
    let out = dir.join(format!("out-{protocol}"));
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .quiet()
        .opt("--mcp-config", &cfg)
        .opt("--tool-protocol", protocol)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .run()
        .expect_ok();
    let section = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    assert!(section.contains("ONE-FORMAT"), "{section}");
    Some(request_with(&base, &["Task 1: Greet the team"]))
}

#[test]
fn the_subagent_request_gives_one_output_instruction_per_tool_protocol() {
    let dir = tempdir();
    // JSON protocol: the subagent prompt itself says the section is the JSON answer's
    // content, and nothing in the request asks for Markdown or a heading beside it.
    let Some(json_request) = subagent_request(&dir.path().join("json"), "json") else {
        return;
    };
    assert!(json_request.contains("## Tools"), "{json_request}");
    assert!(
        json_request.contains("the section's text is the value of `content`"),
        "{json_request}"
    );
    let lower = json_request.to_lowercase();
    for word in ["markdown", "heading"] {
        assert!(!lower.contains(word), "{word:?} in:\n{json_request}");
    }
    // Native tool calls: the content is the section, asked for under its heading.
    let Some(native_request) = subagent_request(&dir.path().join("native"), "native") else {
        return;
    };
    assert!(!native_request.contains("## Tools"), "{native_request}");
    assert!(
        native_request.contains("Return it under a level-2 heading with the task's title"),
        "{native_request}"
    );
    assert!(
        native_request.contains("Heading: ## Greet the team"),
        "{native_request}"
    );
    assert!(!native_request.contains("`content`"), "{native_request}");
}

/// The per-wave figure and its source in an `estimated duration` line.
fn per_wave(stdout: &str) -> &str {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("estimated duration: "))
        .unwrap_or_else(|| panic!("no estimate in:\n{stdout}"));
    line.split_once(" waves × ")
        .map(|(_, rest)| rest)
        .unwrap_or(line)
}

#[test]
fn plan_and_waves_estimate_from_the_call_times_a_run_left_in_the_plan_cache() {
    let dir = tempdir();
    let config = dir.path().join("planwave.toml");
    std::fs::write(&config, "[planner]\nplan_cache = \"cache\"\n").expect("config");
    let fresh = dir.path().join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    let plan_goal = || {
        planwave(["plan", "Deep analysis of Tesla"])
            .instant()
            .quiet()
            .opt("--config", &config)
            .opt("--out", fresh.join("plan.json"))
            .run()
    };
    // Nothing recorded yet: the stated default.
    let before = plan_goal();
    before.expect_ok();
    assert_eq!(
        per_wave(&before.stdout),
        "30.0 s per wave, a default: no recent model calls to measure)"
    );

    // A run against the simulator with a set latency records its calls in the cache.
    let plan = write_json(
        dir.path(),
        "two.json",
        &crate::support::plan("Audit", &[("1", "One", &[]), ("2", "Two", &["1"])]),
    );
    planwave(["run"])
        .arg(&plan)
        .out(dir.path().join("run"))
        .quiet()
        .opt("--config", &config)
        .opt("--sim-latency-ms", "250")
        .opt("--sim-sigma", "0")
        .run()
        .expect_ok();
    let times_file = dir.path().join("cache").join("call-times.json");
    let times = read_json(&times_file);
    let mut ms: Vec<f64> = times["models"]["planwave-sim-1"]
        .as_array()
        .expect("the simulator's call times")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert_eq!(ms.len(), 2, "{times}");
    // Each call took at least the simulator's set latency.
    assert!(ms.iter().all(|&d| d >= 250.0), "{times}");
    ms.sort_by(f64::total_cmp);
    let expected = format!(
        "{:.1} s per wave, the median of 2 recent calls of planwave-sim-1 in the plan cache's {})",
        ms[1] / 1000.0,
        times_file.display()
    );

    // A fresh plan (no run directory beside it) now goes by those calls, and says so.
    let after = plan_goal();
    after.expect_ok();
    assert_eq!(per_wave(&after.stdout), expected, "{}", after.stdout);
    // So does `waves`, with the plan cache from planwave.toml.
    let waves = planwave(["waves"])
        .arg(fresh.join("plan.json"))
        .env("PLANWAVE_CONFIG", &config)
        .run();
    waves.expect_ok();
    assert_eq!(per_wave(&waves.stdout), expected, "{}", waves.stdout);
}
