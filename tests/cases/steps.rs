//! What step plans can do, through the real binary: optional steps,
//! per-step retries, `{{vars.NAME}}` and `{{meta.KEY}}` references, the planner writing a
//! step plan for the tools it is given, and the single-task fallback after failed planning.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases::mcp::everything_config;
use crate::support::{peer, planwave, read_json, repo_file, run_plan, task, tempdir, write_json};

/// An `mcpServers` config with the test server `tests/peers/mcp_crashy.py` (official Python
/// SDK) under `crashy`, counting `flaky`'s calls in `dir/flaky`.
pub(crate) fn crashy_config(dir: &Path) -> Option<std::path::PathBuf> {
    let python = peer("py/bin/python")?;
    let script = repo_file("tests/peers/mcp_crashy.py");
    let flaky = dir.join("flaky");
    Some(write_json(
        dir,
        "mcp.json",
        &json!({"mcpServers": {"crashy": {"command": python, "args": [script],
                 "env": {"CRASHY_FLAKY": flaky.to_str().expect("utf-8")}}}}),
    ))
}

fn outcomes(t: &Value) -> Vec<(u64, String)> {
    t["tool_calls"]
        .as_array()
        .expect("tool calls")
        .iter()
        .map(|c| {
            (
                c["attempt"].as_u64().unwrap_or(0),
                c["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn optional_steps_retries_variables_and_metadata_behave_as_seed_004_says() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"goal": "Greet through flaky tools", "plan_id": "plan_42",
                "created_at": "2026-11-25T10:00:00Z", "metadata": {"complexity": "low"},
                "global_variables": {"who": "world"}, "estimated_duration_secs": 30,
                "steps": [
            {"step_id": "flaky", "description": "Fails twice, then answers", "tool": "flaky",
             "params": {"message": "ok", "fails": 2}, "retryCount": 2},
            {"step_id": "broken", "description": "Always fails", "tool": "broken",
             "params": {"message": "x"}, "optional": true},
            {"step_id": "greet", "description": "Greets anyway", "tool": "hello",
             "params": {"name": "{{vars.who}} from {{meta.team}}[{{broken.result}}] {{flaky.result.result}}"},
             "dependencies": ["flaky", "broken"]}
        ]}),
    );
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out)
        .opt("--mcp-config", &cfg)
        .opt("--meta", "team=research")
        .opt("--retry-backoff-ms", "1")
        .run();
    // The only failure is an optional step's: the run is completed (exit 0).
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["stats"]["failed"], 1);
    assert_eq!(run["stats"]["optional_failed"], 1);

    // retryCount 2: three attempts, the last answers.
    let flaky = task(&run, "flaky");
    assert_eq!(flaky["status"], "completed");
    assert_eq!(
        outcomes(flaky),
        vec![
            (1, "tool_error".into()),
            (2, "tool_error".into()),
            (3, "ok".into())
        ]
    );
    // No retry_count and --retries 1: a tool-reported error is not retried.
    let broken = task(&run, "broken");
    assert_eq!(
        (broken["status"].as_str(), broken["optional"].as_bool()),
        (Some("failed"), Some(true))
    );
    assert_eq!(outcomes(broken), vec![(1, "tool_error".into())]);

    // The dependent ran; the failed optional step's reference became "" and is recorded.
    // (The Python SDK returns `{"result": TEXT}` as structured content, hence `.result.result`.)
    let greet = task(&run, "greet");
    assert_eq!(greet["status"], "completed");
    assert_eq!(greet["empty_refs"], json!(["broken"]));
    assert_eq!(
        greet["tool_calls"][0]["args"]["name"],
        "world from research[] steady: ok"
    );

    // The plan's own metadata and the job's are kept in plan.json.
    let saved = read_json(&out.join("plan.json"));
    assert_eq!(saved["plan_id"], "plan_42");
    assert_eq!(saved["created_at"], "2026-11-25T10:00:00Z");
    assert_eq!(saved["metadata"], json!({"complexity": "low"}));
    assert_eq!(saved["global_variables"], json!({"who": "world"}));
    assert_eq!(saved["estimated_duration_secs"], 30.0);
    assert_eq!(saved["meta"], json!({"team": "research"}));
    assert_eq!(saved["tasks"][0]["retry_count"], 2);
    assert_eq!(saved["tasks"][1]["optional"], true);
}

#[test]
fn a_non_optional_failure_still_blocks_and_retries_follow_the_flag() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "once", "description": "No retries of its own", "tool": "flaky",
             "params": {"message": "m", "fails": 5}, "retry_count": 0},
            {"step_id": "after", "description": "Needs it", "tool": "hello",
             "params": {"name": "{{once.result}}"}, "dependencies": ["once"]}
        ]}),
    );
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).opt("--mcp-config", &cfg).run();
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    assert_eq!(outcomes(task(&run, "once")), vec![(1, "tool_error".into())]);
    assert_eq!(task(&run, "after")["status"], "blocked");
    assert!(run["stats"].get("optional_failed").is_none(), "{run}");

    // A reference to metadata nobody gave is refused before anything runs.
    let bad = write_json(
        dir.path(),
        "bad.json",
        &json!({"steps": [{"step_id": "a", "description": "d", "tool": "hello",
                           "params": {"name": "{{meta.team}} {{vars.nope}}"}}]}),
    );
    let v = planwave(["validate"]).arg(&bad).run();
    v.expect_code(2);
    assert!(
        v.stderr.contains(
            "task a: parameter references {{meta.team}}, but the job's metadata does not define it (--meta KEY=VALUE)"
        ) && v.stderr.contains(
            "task a: parameter references {{vars.nope}}, but the plan's global_variables do not define it"
        ),
        "{}",
        v.stderr
    );
}

#[test]
fn research_plans_tool_steps_for_the_tools_it_has() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let out = dir.path().join("r");
    let r = planwave([
        "research",
        "Add two figures with get-sum, then echo the total",
    ])
    .out(&out)
    .instant()
    .quiet()
    .opt("--plan-format", "steps")
    .opt("--mcp-config", &cfg)
    .opt("--meta", "ticker=TSLA")
    .opt("--max-rounds", "1")
    .run();
    r.expect_ok();
    let plan = read_json(&out.join("plan.json"));
    assert_eq!(plan["format"], "steps", "{plan}");
    assert_eq!(plan["meta"], json!({"ticker": "TSLA"}));
    let tools: Vec<&str> = plan["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["tool"].as_str().expect("every step has a tool"))
        .collect();
    assert_eq!(tools, ["get-sum", "echo", "llm_call"]);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    // The steps ran the real tools: get-sum's answer, then echo's.
    let sum = &task(&run, "step_1")["tool_calls"][0];
    assert_eq!(sum["output"], "The sum of 20 and 20 is 40.");
    // The last step's prompt carried both results; it is the only subagent model call.
    let subagent: Vec<&Value> = run["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "subagent")
        .collect();
    assert_eq!(subagent.len(), 1, "{subagent:?}");
    assert_eq!(subagent[0]["task"], "answer");
}

#[test]
fn failed_planning_falls_back_to_one_task_when_configured() {
    let dir = tempdir();
    let config = dir.path().join("planwave.toml");
    std::fs::write(
        &config,
        "[planner]\nfallback = \"single_task\"\nattempts = 2\n",
    )
    .expect("config");
    let out = dir.path().join("r");
    let r = planwave(["research", "Deep analysis of Tesla"])
        .out(&out)
        .instant()
        .quiet()
        .opt("--config", &config)
        .opt("--sim-planner-faults", "prose,cycle")
        .opt("--max-rounds", "1")
        .run();
    // The fallback's task completed, but the goal was never planned: not a success.
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["plan_fallback"], "no valid plan after 2 attempt(s)");
    assert_eq!(run["tasks"].as_array().map(Vec::len), Some(1));
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.contains("> Fallback plan: planning produced no valid plan (no valid plan after 2 attempt(s)), so a single task answered the goal directly."),
        "{report}"
    );
    // Without the setting, the same failure is bad input (exit 2), as before.
    let plain = planwave(["research", "Deep analysis of Tesla"])
        .out(dir.path().join("r2"))
        .instant()
        .quiet()
        .opt("--planner-attempts", "2")
        .opt("--sim-planner-faults", "prose,cycle")
        .run();
    plain.expect_code(2);
}

#[test]
fn a_batch_job_line_metadata_reaches_its_planner_and_its_step_references() {
    let dir = tempdir();
    let jobs = crate::cases::batch::jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            json!({"id": "byd", "goal": "Deep analysis of BYD", "metadata": {"ticker": "002594.SZ", "year": 2024}}).to_string(),
            json!({"id": "steps", "plan": {"steps": [{"step_id": "a", "description": "Quote",
                   "tool": "llm_call", "params": {"prompt": "Quote {{meta.ticker}} for {{meta.desk}}"}}]},
                   "metadata": {"ticker": "TSLA"}}).to_string(),
            json!({"id": "missing", "plan": {"steps": [{"step_id": "a", "description": "Quote",
                   "tool": "llm_call", "params": {"prompt": "Quote {{meta.ticker}}"}}]}}).to_string(),
        ],
    );
    let out = dir.path().join("b");
    let r = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .instant()
        .quiet()
        .opt("--meta", "desk=research")
        .run();
    // The skipped line makes the batch partial.
    r.expect_code(3);
    // The job's own metadata over the batch's --meta, kept in each plan.json.
    let byd = read_json(&out.join("jobs/byd/plan.json"));
    assert_eq!(
        byd["meta"],
        json!({"desk": "research", "ticker": "002594.SZ", "year": "2024"})
    );
    let steps = read_json(&out.join("jobs/steps/run.json"));
    assert_eq!(steps["status"], "completed", "{steps}");
    // A reference to metadata the job lacks is that line's problem, with its number.
    assert!(
        r.stderr.contains("line 3: job \"missing\": ")
            && r.stderr.contains(
                "parameter references {{meta.ticker}}, but the job's metadata does not define it"
            ),
        "{}",
        r.stderr
    );
}

#[test]
fn expected_output_reaches_the_step_prompt_and_the_evaluator() {
    let dir = tempdir();
    let plan = json!({"goal": "plan-steps-aimock", "steps": [
        {"id": "a", "description": "Get the figure", "tool": "llm_call",
         "params": {"prompt": "Give the figure"}, "expected_output": "alpha figure"},
        {"id": "b", "description": "Summarise it", "tool": "llm_call",
         "params": {"prompt": "Summarise {{a.result}}"}, "dependencies": ["a"],
         "expected_output": "beta summary"}
    ]});
    // Matched on the last user message, first fixture first. Only the evaluator's prompt has
    // "beta summary" followed by a line break (a step's prompt ends with its expected
    // output), so a valid evaluation proves the evaluator was told; step a's answer proves
    // its prompt carried "alpha figure".
    let Some((base, _server)) = crate::cases::aimock::aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "Expected output: beta summary\n"},
             "response": {"content": crate::cases::aimock::EVALUATION}},
            {"match": {"userMessage": "Expected output: alpha figure"},
             "response": {"content": "ALPHA-SAW-EXPECTED"}},
            {"match": {"userMessage": "plan-steps-aimock"}, "response": {"content": plan.to_string()}},
            {"match": {}, "response": {"content": "Nothing to add."}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("r");
    let r = planwave(["research", "plan-steps-aimock"])
        .out(&out)
        .quiet()
        .opt("--plan-format", "steps")
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "correctness", "{run}");
    let a = std::fs::read_to_string(out.join("sections/a.md")).expect("section a");
    assert_eq!(a.trim(), "ALPHA-SAW-EXPECTED");
}
