//! Inputs are bounded by size: an MCP answer over `--mcp-max-output` fails its call at once,
//! a plan or job file over `--max-input-bytes` (or endless) is refused with its size, and a
//! huge description or tool output is held to the context budget with the cut recorded.

use serde_json::json;

use crate::cases::mcp::everything_config;
use crate::support::{id_text, plan, planwave, read_json, run_plan, task, tempdir, write_json};

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
    assert!(
        bytes > 2 * 1024 * 1024,
        "the whole answer was measured: {bytes}"
    );
    // Not a transport fault: not retried.
    assert_eq!(big["tool_calls"].as_array().expect("calls").len(), 1);
    assert_eq!(task(&run, "small")["status"], "completed");
}

#[test]
fn an_endless_or_oversized_plan_is_refused_with_its_size() {
    let zero = planwave(["validate", "/dev/zero"]).run();
    zero.expect_code(2);
    assert!(
        zero.stderr.contains(
            "/dev/zero: more than the limit of 67108864 bytes; raise it with --max-input-bytes"
        ),
        "{}",
        zero.stderr
    );
    let dir = tempdir();
    let big = plan("Big", &[("1", &"d".repeat(2 * 1024 * 1024), &[])]);
    let path = write_json(dir.path(), "big.json", &big);
    let size = std::fs::metadata(&path).expect("size").len();
    let refused = planwave(["validate"])
        .arg(&path)
        .opt("--max-input-bytes", "1MiB")
        .run();
    refused.expect_code(2);
    assert!(
        refused
            .stderr
            .contains(&format!("{size} bytes, over the limit of 1048576 bytes")),
        "{}",
        refused.stderr
    );
    // The same limit holds for a batch's job file, and the environment can raise it.
    planwave(["validate"])
        .arg(&path)
        .env("PLANWAVE_MAX_INPUT_BYTES", "16MiB")
        .run()
        .expect_ok();
}

#[test]
fn a_huge_description_is_held_to_the_context_budget_and_the_cut_recorded() {
    let dir = tempdir();
    let huge = format!("Supply chain review\n{}", "detail. ".repeat(100_000));
    let p = write_json(
        dir.path(),
        "plan.json",
        &plan(
            "Budgeted",
            &[
                ("1", "Company profile", &[]),
                ("2", &huge, &["1"]),
                ("3", "Outlook", &["2"]),
            ],
        ),
    );
    let out = dir.path().join("out");
    run_plan(&p, &out)
        .opt("--context-budget", "2000")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let cuts = task(&run, "2")["context_cut"].as_array().expect("cuts");
    let description = cuts
        .iter()
        .find(|c| c["part"] == "description")
        .expect("the description was cut");
    assert_eq!(id_text(&description["from"]), "2");
    assert!(
        description["kept_tokens"].as_u64() <= Some(500),
        "{description}"
    );
    assert!(
        description["original_tokens"].as_u64() > Some(100_000),
        "{description}"
    );
    // No prompt carries the description whole: not task 2's own, nor its dependent's (which
    // names task 2 by its title, the description's first line).
    for c in run["calls"].as_array().expect("calls") {
        let tokens = c["prompt_tokens"].as_u64().expect("prompt tokens");
        assert!(tokens < 4000, "{c}");
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.len() < 200_000, "report of {} bytes", report.len());
}

#[test]
fn a_tool_output_over_its_share_of_the_budget_is_cut_and_the_cut_recorded() {
    let dir = tempdir();
    let Some(cfg) = everything_config(dir.path(), "everything") else {
        return;
    };
    // echo returns the title the simulated model passes it: ~190 characters.
    let title = "Quarterly revenue by segment and region, ".repeat(4);
    let p = write_json(
        dir.path(),
        "plan.json",
        &json!({"topic": "Cut", "tasks": [
            {"id": 1, "description": title.trim(), "hints": {"suggested_tools": ["echo"]}}
        ]}),
    );
    let out = dir.path().join("out");
    run_plan(&p, &out)
        .opt("--mcp-config", &cfg)
        .opt("--context-budget", "80")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let cuts = task(&run, "1")["context_cut"].as_array().expect("cuts");
    let cut = cuts
        .iter()
        .find(|c| c["part"] == "tool_output")
        .unwrap_or_else(|| panic!("no tool output cut: {cuts:?}"));
    assert_eq!(cut["tool"], "echo");
    assert!(cut["kept_tokens"].as_u64() <= Some(20), "{cut}");
    assert!(cut["original_chars"].as_u64() > Some(150), "{cut}");
}
