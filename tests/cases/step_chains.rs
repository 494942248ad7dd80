//! How a chain of tool calls and a step plan end, through the real binary: a tool's own
//! error stops the chain and the model decides; a step plan ends in an answer (its final
//! step's, or its last step's), shown first in the report.

use serde_json::{Value, json};

use crate::cases::aimock::aimock_with;
use crate::cases::step_recovery::tools_called;
use crate::cases::steps::crashy_config;
use crate::support::{planwave, read_json, task, tempdir, write_json};

#[test]
fn a_tool_error_stops_the_chain_and_the_model_decides() {
    let dir = tempdir();
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "plan.json",
        &json!({"topic": "Chain audit", "objectives": ["check the chain"], "tasks": [
            {"id": 1, "description": "Greet after the broken call", "dependencies": [],
             "hints": {"suggested_tools": ["broken", "hello"]}}
        ]}),
    );
    // Matched on the last user message, first fixture first: the first turn asks for a
    // chain whose first call fails; the results of that call make the model call hello
    // again with its own arguments; hello's result gives the section.
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "[1] hello:"},
             "response": {"content": "{\"content\": \"## Greeting\\n\\nThe retry answered (CHAIN-OK).\"}"}},
            {"match": {"userMessage": "[1] broken (error)"},
             "response": {"content": "{\"content\": \"\", \"next\": [{\"mcp\": \"hello\", \"args\": {\"name\": \"retry\"}}]}"}},
            {"match": {"userMessage": "## Tools"},
             "response": {"content": "{\"content\": \"\", \"next\": [{\"mcp\": \"broken\", \"args\": {\"message\": \"x\"}}, {\"mcp\": \"hello\", \"args\": {\"name\": \"{{input}}\"}}]}"}},
            {"match": {}, "response": {"content": "The audit ran."}}
        ]),
    ) else {
        return;
    };
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let t = task(&run, "1");
    // broken's error ended the chain: hello never got the error text as its input; the
    // model's own retry is the second call, and the record marks the error.
    assert_eq!(
        tools_called(t),
        [
            ("broken".to_owned(), "tool_error".to_owned()),
            ("hello".to_owned(), "ok".to_owned())
        ],
        "{t}"
    );
    assert_eq!(t["tool_calls"][1]["args"], json!({"name": "retry"}));
    assert!(
        t["tool_calls"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Error executing tool broken")),
        "{t}"
    );
    let section = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    assert!(section.contains("CHAIN-OK"), "{section}");
}

/// An `mcpServers` config with `mcp-server-time` under `time`.
fn time_config(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let time = crate::support::peer("py/bin/mcp-server-time")?;
    Some(write_json(
        dir,
        "time.json",
        &json!({"mcpServers": {"time": {"command": time}}}),
    ))
}

fn time_steps(dir: &std::path::Path, name: &str, final_now: bool) -> std::path::PathBuf {
    write_json(
        dir,
        name,
        &json!({"goal": "What time is it in UTC?", "steps": [
            {"step_id": "now", "description": "Read the clock", "tool": "get_current_time",
             "params": {"timezone": "UTC"}, "final": final_now},
            {"step_id": "note", "description": "Write a note about it", "tool": "llm_call",
             "params": {"prompt": "Note the time {{now.result}}"}, "dependencies": ["now"]}
        ]}),
    )
}

#[test]
fn a_step_plan_ends_in_an_answer_shown_first() {
    let dir = tempdir();
    let Some(cfg) = time_config(dir.path()) else {
        return;
    };
    // A step marked final: its raw JSON is the answer, fenced as JSON in the report.
    let out = dir.path().join("final");
    crate::support::run_plan(time_steps(dir.path(), "final.json", true), &out)
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let answer = run["answer"].as_str().expect("run.json has the answer");
    let clock: Value = serde_json::from_str(answer).expect("the clock's JSON");
    assert_eq!(clock["timezone"], "UTC", "{answer}");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    let at = |needle: &str| {
        report
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in:\n{report}"))
    };
    // The answer comes first, fenced as JSON; the steps follow as an appendix.
    assert!(at("## Answer\n\n```json\n{") < at("## Executive summary"));
    assert!(at("## Executive summary") < at("## Appendix: step outputs"));
    assert!(at("### Read the clock") > at("## Appendix: step outputs"));
    assert!(at("### Write a note about it") > at("### Read the clock"));
    assert!(!report.contains("\n## Read the clock"), "{report}");
    assert!(!report.contains("\n## Write a note about it"), "{report}");

    // Without a final step, the last step's output is the answer.
    let out = dir.path().join("last");
    crate::support::run_plan(time_steps(dir.path(), "last.json", false), &out)
        .opt("--mcp-config", &cfg)
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let note = std::fs::read_to_string(out.join("sections/note.md")).expect("note");
    assert_eq!(run["answer"].as_str(), Some(note.trim()));
    // A research plan has no answer of this kind.
    let research = crate::support::write_json(
        dir.path(),
        "research.json",
        &crate::support::plan("Topic", &[("1", "One chapter", &[])]),
    );
    let out = dir.path().join("research");
    crate::support::run_plan(&research, &out).run().expect_ok();
    assert!(read_json(&out.join("run.json")).get("answer").is_none());
}
