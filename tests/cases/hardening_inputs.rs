//! Inputs planwave does not control are bounded and reported precisely: MCP answers, plan
//! and job files, and the text of tools and prerequisites handed to the next model.

use serde_json::json;

use crate::cases::mcp::everything_config;
use crate::support::{read_json, run_plan, task, tempdir, write_json};

#[test]
fn an_mcp_answer_over_the_limit_fails_its_call_at_once_and_says_so() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    // echo answers with its argument: a 2 MiB message makes a 2 MiB tool result.
    let message = "x".repeat(2 * 1024 * 1024);
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "big", "description": "Echo a lot", "tool": "echo", "params": {"message": message}},
            {"step_id": "small", "description": "Echo a little", "tool": "echo", "params": {"message": "ok"}}
        ]}),
    );
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out)
        .opt("--mcp-config", &cfg)
        .opt("--mcp-max-output", "1MiB")
        // Were the answer dropped and waited for, the call would fail as a timeout instead.
        .opt("--tool-timeout", "30")
        .run();
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    let big = task(&run, "big");
    assert_eq!(big["status"], "failed");
    let error = big["error"].as_str().expect("error");
    assert!(
        error.starts_with("tool echo (server everything): tool result of ")
            && error.contains(" bytes exceeds the limit of 1048576 bytes"),
        "{error}"
    );
    let bytes: u64 = error["tool echo (server everything): tool result of ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a size");
    assert!(bytes > 2 * 1024 * 1024, "the whole answer was measured: {bytes}");
    // Not a transport fault: not retried.
    assert_eq!(big["tool_calls"].as_array().expect("calls").len(), 1);
    assert_eq!(task(&run, "small")["status"], "completed");
}
