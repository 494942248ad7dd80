//! Step plans at the edges (issue 36), through the real binary: a tool chain stops at a
//! tool's own error and the model decides, a step plan ends in an answer, recovery keeps a
//! step plan's kind, and `plan`/`validate` agree with `run`.

use serde_json::{Value, json};

use crate::cases::aimock::aimock_with;
use crate::cases::steps::crashy_config;
use crate::support::{planwave, read_json, task, tempdir, write_json};

fn tools_called(t: &Value) -> Vec<(String, String)> {
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
