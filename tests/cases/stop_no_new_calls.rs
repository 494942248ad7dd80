//! After a stop (SIGTERM, Ctrl-C), no new model call starts: the run ends with a plain
//! executive summary instead of asking the integrator's model for one, which would delay the
//! exit by a whole model latency (issue 33, item 13).

use crate::cases::durable::{nine_tasks, on_sim};
use crate::support::{SimLlm, events, planwave, read_json, tempdir};

/// The `llm_call` events of the journal with role `integrator`.
fn integrator_calls_in_journal(out: &std::path::Path) -> usize {
    events(out)
        .iter()
        .filter(|e| e["type"] == "llm_call" && e["role"] == "integrator")
        .count()
}

#[test]
fn sigterm_mid_run_sends_the_model_no_integrator_call() {
    let dir = tempdir();
    let plan = nine_tasks(dir.path());
    // The server counts requests per role itself, independently of planwave's records.
    let server = SimLlm::start(&["--latency-ms", "150", "--sigma", "0"], &[]);
    let out = dir.path().join("out");
    let mut child = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .opt("--concurrency", "2")
        .spawn();
    child.wait_for(" completed in ", 2);
    child.terminate();
    let (code, stdout) = child.wait();
    assert_eq!(code, 143, "{stdout}");
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "cancelled");

    let stats = server.stats();
    assert!(
        stats["roles"]["subagent"].as_u64().unwrap_or(0) >= 2,
        "the run did call the model before the stop: {stats}"
    );
    assert_eq!(
        stats["roles"]["integrator"].as_u64().unwrap_or(0),
        0,
        "an integrator call was sent after the stop: {stats}"
    );
    assert_eq!(integrator_calls_in_journal(&out), 0);
    let calls = run["calls"].as_array().expect("calls");
    assert!(calls.iter().all(|c| c["role"] != "integrator"), "{calls:?}");
    // The report still has a summary: the plain one, which says why.
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(
        report.contains("the run was stopped (interrupted): no model call after a stop"),
        "{report}"
    );
}

#[test]
fn ctrl_c_mid_run_records_no_integrator_call_and_resume_still_asks_for_the_summary() {
    let dir = tempdir();
    let plan = nine_tasks(dir.path());
    let out = dir.path().join("out");
    let mut child = on_sim(&plan, &out, "150").spawn();
    child.wait_for(" completed in ", 2);
    child.interrupt();
    let (code, stdout) = child.wait();
    assert_eq!(code, 130, "{stdout}");
    assert_eq!(integrator_calls_in_journal(&out), 0);

    // A run that is not stopped still asks the model for its summary: the resume does.
    planwave(["resume"]).arg(&out).quiet().run().expect_ok();
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
    assert_eq!(integrator_calls_in_journal(&out), 1);
}
