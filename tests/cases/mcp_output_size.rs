//! `--mcp-max-output` bounds a tool's result in bytes of its text, whatever the answer's
//! encoding on the wire: a server that sends the text twice (`content` and
//! `structuredContent`, as the Python SDK does) or escapes it is held to the same limit as
//! one that sends it once.

use serde_json::json;

use crate::support::{peer, read_json, run_plan, task, tempdir, write_json};

#[test]
fn the_output_limit_counts_the_result_s_bytes_not_the_answer_s_encoding() {
    let dir = tempdir();
    let Some(python) = peer("py/bin/python") else {
        return;
    };
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"sized": {"command": python,
            "args": [crate::support::repo_file("tests/peers/mcp_sized.py")]}}}),
    );
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [
            {"step_id": "ascii", "description": "1.5 MiB of ASCII", "tool": "sized",
             "params": {"kib": 1536, "char": "x"}},
            {"step_id": "cjk", "description": "1.5 MiB of CJK", "tool": "sized",
             "params": {"kib": 1536, "char": "中"}},
            {"step_id": "over", "description": "2.5 MiB", "tool": "sized",
             "params": {"kib": 2560, "char": "x"}}
        ]}),
    );
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out)
        .opt("--mcp-config", &cfg)
        .opt("--mcp-max-output", "2MiB")
        .run();
    r.expect_code(3);
    let run = read_json(&out.join("run.json"));
    for id in ["ascii", "cjk"] {
        assert_eq!(
            task(&run, id)["status"],
            "completed",
            "{id}: {}",
            task(&run, id)
        );
    }
    let over = task(&run, "over");
    assert_eq!(over["status"], "failed");
    assert_eq!(
        over["error"],
        "tool sized (server sized): tool result of 2621440 bytes exceeds the limit of 2097152 bytes (raise it with --mcp-max-output or [mcp] max_output_bytes)",
    );
    assert_eq!(over["tool_calls"].as_array().expect("calls").len(), 1);
}
