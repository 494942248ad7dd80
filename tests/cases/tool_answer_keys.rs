//! The JSON tool protocol has two keys, `content` and `next` (seed 000): an answer with any
//! other key is sent back for repair, as other malformed answers are, instead of being used
//! as if the extra key were not there. `@copilotkit/aimock` scripts the model (offline, on
//! loopback), `server-everything` is the tool server.

use std::path::Path;

use serde_json::{Value, json};

use super::aimock::aimock_with;
use super::mcp::everything_config;
use super::tool_answers::{echo_plan, model_calls_of};
use crate::support::{Output, planwave, read_json, tempdir};

fn script(first: &str, repaired: &str) -> Value {
    json!([
        {"match": {"userMessage": "has these problems"}, "response": {"content": repaired}},
        {"match": {"userMessage": "## Tools"}, "response": {"content": first}},
        {"match": {}, "response": {"content": "The run ended."}}
    ])
}

/// Runs the one-task echo plan with the model answering `first`, then `repaired` to a
/// repair request; `None` when peer tests are skipped.
fn run(dir: &Path, first: &str, repaired: &str) -> Option<Output> {
    let cfg = everything_config(dir, "everything")?;
    let (base, _server) = aimock_with(dir, script(first, repaired))?;
    Some(
        planwave(["run"])
            .arg(echo_plan(dir))
            .out(dir.join("out"))
            .opt("--mcp-config", &cfg)
            .opt("--llm-base-url", &base)
            .opt("--model", "gpt-4o")
            .run(),
    )
}

#[test]
fn an_answer_with_a_key_besides_content_and_next_is_repaired() {
    let dir = tempdir();
    let Some(r) = run(
        dir.path(),
        "{\"content\": \"## Keys\\n\\nFIRST-ANSWER\", \"next\": [], \"confidence\": 0.9}",
        "{\"content\": \"## Keys\\n\\nREPAIRED-ANSWER\"}",
    ) else {
        return;
    };
    r.expect_ok();
    let out = dir.path().join("out");
    assert_eq!(model_calls_of(&out, "1"), 2, "the answer and its repair");
    let section = std::fs::read_to_string(out.join("sections/1.md")).expect("section");
    assert_eq!(section.trim_end(), "## Keys\n\nREPAIRED-ANSWER");
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
}

#[test]
fn a_model_that_keeps_an_extra_key_fails_its_task_naming_the_key() {
    let dir = tempdir();
    let extra = "{\"content\": \"## Keys\\n\\nStill extra\", \"reasoning\": \"because\"}";
    let Some(r) = run(dir.path(), extra, extra) else {
        return;
    };
    r.expect_code(3);
    let out = dir.path().join("out");
    let run = read_json(&out.join("run.json"));
    let error = run["tasks"][0]["error"].as_str().expect("error").to_owned();
    assert!(
        error.contains(
            "the answer has a key besides \"content\" and \"next\": \"reasoning\"; give only those two"
        ),
        "{error}"
    );
    assert!(!out.join("sections/1.md").exists());
}
