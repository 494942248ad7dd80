//! Bad input is named precisely: a job line that is not UTF-8 (skipped, with its number),
//! missing tools (with the server that did not start, in words), and plan shapes that used
//! to pass or puzzle (a repeated key, an id out of range).

use serde_json::json;

use crate::support::{planwave, read_json, tempdir, write_json};

#[test]
fn a_job_line_that_is_not_utf8_is_skipped_with_its_number() {
    let dir = tempdir();
    let mut jobs = Vec::new();
    jobs.extend_from_slice(br#"{"id": "a", "goal": "first"}"#);
    jobs.extend_from_slice(b"\n{\"id\": \"b\xff\xfe\", \"goal\": \"x\"}\n");
    jobs.extend_from_slice(br#"{"id": "c", "goal": "third"}"#);
    let file = dir.path().join("jobs.jsonl");
    std::fs::write(&file, jobs).expect("write");
    let out = dir.path().join("batch");
    let res = planwave(["batch"])
        .arg(&file)
        .out(&out)
        .instant()
        .quiet()
        .run();
    // Bad lines make the batch's exit code 3, as with any other bad line.
    res.expect_code(3);
    assert!(
        res.stderr.contains(&format!(
            "{}: line 2: not valid UTF-8 (at byte 10) (skipped)",
            file.display()
        )),
        "{}",
        res.stderr
    );
    let summary = read_json(&out.join("batch.json"));
    assert_eq!(summary["bad_lines"][0]["line"], 2);
    assert_eq!(summary["jobs"].as_array().expect("jobs").len(), 2);
}

#[test]
fn missing_tools_name_the_server_that_did_not_start() {
    let dir = tempdir();
    // Nothing listens on port 9 (discard): the HTTP server cannot start.
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &json!({"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}),
    );
    let suggested = write_json(
        dir.path(),
        "suggested.json",
        &json!({"topic": "t", "tasks": [
            {"id": 1, "description": "d", "hints": {"suggested_tools": ["echo"]}}
        ]}),
    );
    let ok = planwave(["validate"])
        .arg(&suggested)
        .opt("--mcp-config", &cfg)
        .run();
    ok.expect_ok();
    assert!(
        ok.stderr.contains(
            "warning: no MCP tools are available (MCP server web did not start: initialization failed: "
        ) && ok.stderr.contains("suggested tools ignored: echo"),
        "{}",
        ok.stderr
    );
    let step = write_json(
        dir.path(),
        "step.json",
        &json!({"steps": [{"step_id": "s", "description": "d", "tool": "echo", "params": {"message": "x"}}]}),
    );
    let bad = planwave(["validate"])
        .arg(&step)
        .opt("--mcp-config", &cfg)
        .run();
    bad.expect_code(2);
    assert!(
        bad.stderr.contains(
            "task s: unknown tool echo (known tools: llm_call; MCP server web did not start: "
        ),
        "{}",
        bad.stderr
    );
    // In words: no Rust type names from the MCP SDK, on any line.
    for out in [&ok.stderr, &bad.stderr] {
        assert!(
            !out.contains("::") && !out.contains("WorkerTransport"),
            "{out}"
        );
    }
}

#[test]
fn plan_shapes_that_used_to_pass_or_puzzle_are_named() {
    let dir = tempdir();
    let dup = dir.path().join("dup.json");
    std::fs::write(
        &dup,
        r#"{"topic": "t", "tasks": [{"id": 1, "description": "a"}], "tasks": [{"id": 2, "description": "b"}]}"#,
    )
    .expect("write");
    let r = planwave(["validate"]).arg(&dup).run();
    r.expect_code(2);
    assert!(
        r.stderr.contains("the plan has \"tasks\" more than once"),
        "{}",
        r.stderr
    );

    let big = planwave(["validate", "-"])
        .stdin(r#"{"topic": "t", "tasks": [{"id": 9223372036854775808, "description": "d"}]}"#)
        .run();
    big.expect_code(2);
    assert!(
        big.stderr.contains(
            "task #1: \"id\" 9223372036854775808 is out of range (an integer id is at most 9223372036854775807"
        ),
        "{}",
        big.stderr
    );
}
