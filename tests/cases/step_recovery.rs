//! A step plan's recovery, through the real binary: a failed tool step is replaced by
//! another tool step (from the failure point, in `run --recover` and inside `research`, on
//! aimock and on the simulator), or the whole step plan is replanned, still in steps.

use serde_json::{Value, json};

use crate::cases::aimock::{
    EVALUATION, aimock_requests, aimock_with, answer_request, messages_text, request_with,
};
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
        answer.starts_with(
            "Answer from <data source=\"step greet\">\n{\"result\":\"hello team\"}\n</data> and "
        ) && answer.contains("hello data desk"),
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

#[test]
fn recovery_replaces_a_failed_tool_step_with_another_tool_step() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    // greet completes, a fails for good (broken always reports an error), answer is blocked.
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"goal": "Greet the team", "steps": [
            {"step_id": "greet", "description": "Greet", "tool": "hello", "params": {"name": "team"}},
            {"step_id": "a", "description": "Fetch the data", "tool": "broken", "params": {"message": "x"}},
            {"step_id": "answer", "description": "Answer", "tool": "llm_call",
             "params": {"prompt": "Answer from {{greet.result}} and {{a.result}}"},
             "dependencies": ["greet", "a"]}
        ]}),
    );
    let out = dir.path().join("partial");
    let r = planwave(["run", "--recover"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--mcp-config", &cfg)
        .run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["rounds"][0]["passes"][0]["recovery"],
        "replan_from_failure"
    );
    // The failed step was replaced by a step with another tool; the kept one was not rerun.
    assert_eq!(ids(&run), ["greet", "a_alt", "answer"]);
    let alt = task(&run, "a_alt");
    assert_eq!(tools_called(alt), [("hello".to_owned(), "ok".to_owned())]);
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(plan["format"], "steps", "{plan}");
    let answer = &plan["tasks"][2];
    assert_eq!(answer["tool"], "llm_call");
    assert_eq!(answer["dependencies"], json!(["greet", "a_alt"]));
    assert!(
        answer["params"]["prompt"]
            .as_str()
            .is_some_and(|p| p.contains("{{a_alt.result}}")),
        "{answer}"
    );
    assert_eq!(
        task(&run, "greet")["tool_calls"].as_array().map(Vec::len),
        Some(1)
    );
    // The replanner saw the catalogue and the failed step's error (kept in the round).
    let asked = read_json(&out.join("rounds/1/replan-pass-2.json"));
    assert_eq!(asked["replaced"], json!(["a", "answer"]), "{asked}");

    // Nothing completed: a complete replan, still in steps, with the tools it has.
    let plan = write_json(
        dir.path(),
        "none.json",
        &json!({"goal": "Say hello to the team", "steps": [
            {"step_id": "a", "description": "Fetch the data", "tool": "broken", "params": {"message": "x"}},
            {"step_id": "answer", "description": "Answer", "tool": "llm_call",
             "params": {"prompt": "Answer from {{a.result}}"}, "dependencies": ["a"]}
        ]}),
    );
    let out = dir.path().join("complete");
    planwave(["run", "--recover"])
        .arg(&plan)
        .out(&out)
        .instant()
        .quiet()
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["rounds"][0]["passes"][0]["recovery"], "complete_replan");
    assert_eq!(run["status"], "completed", "{run}");
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(plan["format"], "steps", "{plan}");
    let tools: Vec<&str> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["tool"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tools, ["hello", "llm_call"], "{plan}");
}
