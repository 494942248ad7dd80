//! Output caps, answers cut by them, structured output and degenerate answers, through the
//! real binary: on the simulator (which honours `max_tokens` and says `finish_reason:
//! length`) and on aimock (an OpenAI-compatible mock written by others).

use serde_json::{Value, json};

use crate::cases::aimock::{EVALUATION, aimock_with};
use crate::support::{
    events, http_get_json, plan, planwave, read_json, run_plan, task, tempdir, write_json,
};

/// A three-task English plan.
fn three_tasks(dir: &std::path::Path) -> std::path::PathBuf {
    write_json(
        dir,
        "plan.json",
        &plan(
            "Acme review",
            &[
                ("1", "Acme business model", &[]),
                ("2", "Acme finances", &[]),
                ("3", "Acme outlook", &["1", "2"]),
            ],
        ),
    )
}

#[test]
fn sections_cut_by_the_cap_are_truncated_not_completed() {
    let dir = tempdir();
    let plan = three_tasks(dir.path());
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out)
        .quiet()
        .opt("--max-output", "subagent=20")
        .run();
    // Not every task completed: the exit code says so.
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    for id in ["1", "2", "3"] {
        let t = task(&run, id);
        assert_eq!(t["status"], "truncated", "{t:#}");
        assert!(
            t["warnings"]
                .as_array()
                .is_some_and(|w| w.iter().any(|w| w["kind"] == "truncated")),
            "{t:#}"
        );
    }
    assert_eq!(run["stats"]["truncated"], 3, "{:#}", run["stats"]);
    assert_eq!(run["stats"]["completed"], 0);
    // Kept and handed on: the dependent ran on its prerequisites' (cut) sections.
    assert_eq!(run["status"], "partial");
    let cut: Vec<Value> = events(&out)
        .into_iter()
        .filter(|e| e["type"] == "task_completed")
        .collect();
    assert_eq!(cut.len(), 3);
    assert!(cut.iter().all(|e| e["truncated"] == true), "{cut:#?}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.contains("cut by the output limit"),
        "the report marks the cut sections:\n{report}"
    );
}

#[test]
fn a_plan_cut_by_the_cap_is_reported_as_cut_and_asked_again_shorter() {
    let r = planwave(["plan", "Analyse Acme's business"])
        .instant()
        .opt("--max-output", "planner=40")
        .opt("--planner-attempts", "2")
        .run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("the answer was cut by the output limit (40 tokens)"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("truncated at line"), "{}", r.stderr);
}

#[test]
fn an_unknown_role_for_a_cap_is_bad_input() {
    let r = planwave(["plan", "Analyse Acme"])
        .instant()
        .opt("--max-output", "writer=10")
        .run();
    r.expect_code(2);
    assert!(r.stderr.contains("writer"), "{}", r.stderr);
}

#[test]
fn a_context_overflow_ends_planning_with_exit_2_and_no_retry() {
    let dir = tempdir();
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([{"match": {}, "response": {
            "error": {"message": "request (2151 tokens) exceeds the available context size (2048 tokens), try increasing it",
                      "type": "exceed_context_size_error"},
            "status": 400}}]),
    ) else {
        return;
    };
    let r = planwave(["plan", "Analyse Acme"])
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .fast_retries()
        .run();
    r.expect_code(2);
    assert!(r.stderr.contains("context overflow"), "{}", r.stderr);
    assert!(r.stderr.contains("--max-output"), "{}", r.stderr);
    let journal = http_get_json(&base.replace("/v1", "/__aimock/journal"));
    let asked = journal.as_array().map_or(0, Vec::len);
    assert_eq!(asked, 1, "asked once, not retried: {journal:#}");
}

/// The journal's chat requests whose system or user text contains `needle`.
fn requests_with(journal: &Value, needle: &str) -> Vec<Value> {
    journal
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["body"]["messages"].to_string().contains(needle))
        .map(|e| e["body"].clone())
        .collect()
}

#[test]
fn every_json_answer_is_asked_for_with_a_bounded_schema() {
    let dir = tempdir();
    let reflection = r#"{"root_causes": [], "incorrect_assumptions": [], "alternative_approaches": [], "optimization_suggestions": [], "lessons_learned": [], "should_replan": false}"#;
    let plan = r#"{"research_type": "company", "topic": "Acme", "objectives": ["know Acme"], "tasks": [{"id": 1, "description": "Acme business model", "dependencies": [], "hints": {"data_needs": [], "key_questions": [], "suggested_tools": []}}]}"#;
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "Evaluate the round above"}, "response": {"content": EVALUATION}},
            {"match": {"userMessage": "Reflect on the round"}, "response": {"content": reflection}},
            {"match": {"userMessage": "plan-acme-schema"}, "response": {"content": plan}},
            {"match": {}, "response": {"content": "## Acme\n\nRevenue grew 12% in 2024 (source: annual report)."}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("out");
    planwave(["research", "plan-acme-schema"])
        .out(&out)
        .quiet()
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--max-rounds", "1")
        .run()
        .expect_ok();
    let journal = http_get_json(&base.replace("/v1", "/__aimock/journal"));
    for (needle, name) in [
        ("plan-acme-schema", "research_plan"),
        ("Evaluate the round above", "evaluation"),
        ("Reflect on the round", "reflection"),
    ] {
        let asked = requests_with(&journal, needle);
        let first = asked.first().unwrap_or_else(|| panic!("no {name} request"));
        let format = &first["response_format"];
        assert_eq!(format["type"], "json_schema", "{name}: {format:#}");
        assert_eq!(format["json_schema"]["name"], name, "{format:#}");
        // Bounded, so a grammar ends a runaway answer.
        assert!(format.to_string().contains("\"maxItems\""), "{format:#}");
        assert!(
            first["max_tokens"].as_u64().is_some(),
            "{name}: a cap is sent"
        );
    }
    // A section is free text: no response_format.
    let sections = requests_with(&journal, "Acme business model");
    assert!(
        sections.iter().any(|b| b.get("response_format").is_none()),
        "{sections:#?}"
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["provider"]["response_format"], "json_schema", "{run:#}");
}

#[test]
fn a_looping_answer_or_a_leaked_special_token_is_not_a_section() {
    let dir = tempdir();
    let looped = "The company is a leader in electric vehicles. ".repeat(12);
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "Acme business model"}, "response": {"content": looped}},
            {"match": {"userMessage": "Acme finances"},
             "response": {"content": "## Finances\n\nRevenue grew 12%.<|im_end|>\n<|im_start|>user\nWrite more"}},
            {"match": {}, "response": {"content": "## Outlook\n\nThe outlook is steady: 3% growth in 2025."}}
        ]),
    ) else {
        return;
    };
    let plan = three_tasks(dir.path());
    let out = dir.path().join("out");
    let r = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .quiet()
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .fast_retries()
        .run();
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    let looping = task(&run, "1");
    assert_eq!(looping["status"], "failed", "{looping:#}");
    assert!(
        looping["error"]
            .as_str()
            .is_some_and(|e| e.contains("repeats one sentence")),
        "{looping:#}"
    );
    let leaked = task(&run, "2");
    assert_eq!(leaked["status"], "failed", "{leaked:#}");
    assert!(
        leaked["error"]
            .as_str()
            .is_some_and(|e| e.contains("<|im_end|>")),
        "{leaked:#}"
    );
    // Retried once (the default --retries 1) before failing.
    assert_eq!(looping["attempts"], 2, "{looping:#}");
}
