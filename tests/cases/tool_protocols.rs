//! What the subagent's request asks for under each tool protocol: one output instruction,
//! the JSON answer's `content` under `json`, a section under its heading under `native`.

use serde_json::json;

use crate::cases::aimock::{aimock_with, request_with};
use crate::cases::steps::crashy_config;
use crate::support::{planwave, tempdir, write_json};

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
