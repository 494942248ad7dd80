//! The JSON tool protocol with a model that breaks the format: `@copilotkit/aimock` scripts
//! the answers (matched on the last user message: the tool protocol, the tool results, the
//! repair request), `server-everything` runs the calls. A broken answer is read tolerantly or
//! repaired, and its JSON never reaches a section; a model that cannot repair fails its task.

use std::path::Path;

use serde_json::{Value, json};

use super::aimock::aimock_with;
use super::mcp::everything_config;
use crate::support::{events, id_text, planwave, read_json, task, tempdir, write_json};

const TITLE: &str = "Echo the audit marker";

/// A one-task plan suggesting echo.
pub(crate) fn echo_plan(dir: &Path) -> std::path::PathBuf {
    write_json(
        dir,
        "plan.json",
        &json!({"topic": "Tool protocol audit", "objectives": ["check the tool loop"], "tasks": [
            {"id": 1, "description": TITLE, "dependencies": [],
             "hints": {"suggested_tools": ["echo"]}}
        ]}),
    )
}

/// Fixtures answering the tool protocol's first turn, the tool results and each repair
/// request, with a summary for everything else.
fn script(ask: &str, after_results: &str, repaired: &str) -> Value {
    json!([
        {"match": {"userMessage": "has these problems"}, "response": {"content": repaired}},
        {"match": {"userMessage": "Tool results, in call order"}, "response": {"content": after_results}},
        {"match": {"userMessage": "## Tools"}, "response": {"content": ask}},
        {"match": {}, "response": {"content": "The audit ran."}}
    ])
}

pub(crate) fn model_calls_of(out: &Path, id: &str) -> usize {
    events(out)
        .iter()
        .filter(|e| e["type"] == "llm_call" && id_text(&e["task"]) == id)
        .count()
}

/// Neither the section files nor the report hold the protocol's raw JSON.
fn assert_no_raw_json(out: &Path) {
    let mut files = vec![out.join("report.md")];
    if let Ok(dir) = std::fs::read_dir(out.join("sections")) {
        files.extend(dir.map(|e| e.expect("entry").path()));
    }
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable");
        for raw in ["\"content\"", "\"next\"", "```json", "{\""] {
            assert!(!text.contains(raw), "{raw} in {}:\n{text}", f.display());
        }
    }
}

#[test]
fn prose_wrapped_fenced_and_truncated_answers_still_give_a_proper_section() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let Some((base, _server)) = aimock_with(
        dir.path(),
        script(
            // Prose before the JSON; the first call's {{input}} is the task's title.
            "I will echo the task first.\n{\"content\": \"\", \"next\": [{\"mcp\": \"echo\", \"args\": {\"message\": \"{{input}}\"}}]}",
            // A fence cut off mid-string: no section can come of it, so it is repaired.
            "```json\n{\"content\": \"## Echo findings\\n\\nThe echo tool answ",
            "Fixed:\n```json\n{\"content\": \"## Echo findings\\n\\nThe echo tool answered with the marker (REPAIRED-7).\"}\n```",
        ),
    ) else {
        return;
    };
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(echo_plan(dir.path()))
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .run()
        .expect_ok();

    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    let calls = task(&run, "1")["tool_calls"]
        .as_array()
        .expect("tool calls");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["tool"], "echo");
    assert_eq!(
        calls[0]["args"],
        json!({"message": TITLE}),
        "the chain starts with the task's title"
    );
    assert!(
        calls[0]["output"]
            .as_str()
            .is_some_and(|o| o.contains(TITLE)),
        "{calls:?}"
    );
    // The first answer, the truncated one and its one repair.
    assert_eq!(model_calls_of(&out, "1"), 3);
    let section = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    assert_eq!(
        section.trim_end(),
        "## Echo findings\n\nThe echo tool answered with the marker (REPAIRED-7)."
    );
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("(REPAIRED-7)"), "{report}");
    assert_no_raw_json(&out);
}

#[test]
fn a_model_that_cannot_repair_its_answer_fails_the_task_clearly() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let cut = "Here is the section: {\"content\": \"## Never finished\\n\\nThe tool";
    let Some((base, _server)) = aimock_with(dir.path(), script(cut, cut, cut)) else {
        return;
    };
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(echo_plan(dir.path()))
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .run()
        .expect_code(3);

    let run = read_json(&out.join("run.json"));
    let t = task(&run, "1");
    assert_eq!(t["status"], "failed", "{run}");
    let error = t["error"].as_str().expect("error");
    assert!(
        error.contains("the tool-protocol answer is still unusable after 2 repairs: JSON is truncated at line 1"),
        "{error}"
    );
    // Not retried as a whole: the answer and its two repairs, once.
    assert_eq!(t["attempts"], 1);
    assert_eq!(t["failure_kind"], "fatal");
    assert_eq!(model_calls_of(&out, "1"), 3);
    assert!(!out.join("sections/1.md").exists());
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(!report.contains("Never finished"), "{report}");
    assert_no_raw_json(&out);
}
