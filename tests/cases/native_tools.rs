//! Native tool calling offers a task the tools it suggests (all of them only when it
//! suggests none), and a task whose model called none of its suggested tools is completed
//! with a warning saying so, not silently as if the tools had been used.

use serde_json::{Value, json};

use super::aimock::{aimock_requests, aimock_with};
use super::mcp::everything_config;
use crate::support::{planwave, read_json, task, tempdir, write_json};

/// The names of the tools a request offered.
fn offered(request: &Value) -> Vec<String> {
    request["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_native_request_offers_the_suggested_tools_and_an_unused_suggestion_is_a_warning() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([{"match": {}, "response": {"content": "## Section\n\nAcme sold 12 units in 2024."}}]),
    ) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "plan.json",
        &json!({"topic": "Acme", "tasks": [
            {"id": 1, "description": "Echo the figures", "dependencies": [],
             "hints": {"suggested_tools": ["echo"]}},
            {"id": 2, "description": "Anything else", "dependencies": []}
        ]}),
    );
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--mcp-config", &cfg)
        .opt("--tool-protocol", "native")
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .opt("--concurrency", "1")
        .quiet()
        .run()
        .expect_ok();
    let requests: Vec<Value> = aimock_requests(&base)
        .into_iter()
        .filter(|r| !offered(r).is_empty())
        .collect();
    assert_eq!(requests.len(), 2, "one request per task offers tools");
    let first = offered(&requests[0]);
    let second = offered(&requests[1]);
    let (mine, all) = if first.len() == 1 {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(mine, ["echo"], "task 1 suggests echo alone");
    assert!(
        all.len() > 3 && all.contains(&"get-sum".to_owned()),
        "{all:?}"
    );

    let run = read_json(&out.join("run.json"));
    let t1 = task(&run, "1");
    assert_eq!(t1["status"], "completed", "{t1}");
    assert_eq!(
        t1["warnings"][0],
        json!({"kind": "no_tool_call", "suggested": ["echo"]}),
        "{t1}"
    );
    assert!(task(&run, "2").get("warnings").is_none_or(|w| {
        w.as_array()
            .is_some_and(|w| w.iter().all(|w| w["kind"] != "no_tool_call"))
    }));
    let shown = planwave(["show"]).arg(&out).run();
    assert!(
        shown
            .stdout
            .contains("no tool called although the task suggests echo"),
        "{}",
        shown.stdout
    );
}
