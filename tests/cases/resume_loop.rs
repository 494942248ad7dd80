//! `planwave resume` of a `research`: the interrupted round's completed tasks are kept (no
//! second model call), the round is finished, and the loop goes on to its stop condition.

use crate::support::{
    events, journal_subagent_calls, planwave, read_json, tempdir, wait_for_in_file, write_json,
};

#[test]
fn resume_after_kill_9_finishes_the_round_and_continues_the_loop() {
    let dir = tempdir();
    // Task 3 never ends while the first process runs; 1, 2 and 4 (which needs 1 and 2) do.
    let latency = write_json(
        dir.path(),
        "latency.json",
        &serde_json::json!({"3": 600000}),
    );
    let out = dir.path().join("r");
    let mut child = planwave(["research", "Deep analysis of Tesla"])
        .out(&out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "0")
        .opt("--sim-latency-file", &latency)
        .opt("--sim-scores", "40,96")
        .spawn();
    // A completion is printed only once it is durable. Completions that came while the plan
    // still streamed count only once the plan's close is journaled (else resume rightly runs
    // them again), so the kill waits for that too.
    child.wait_for(" completed in ", 3);
    wait_for_in_file(
        &out.join("rounds/1/events.jsonl"),
        "\"type\":\"plan_completed\"",
    );
    child.kill_9();
    assert!(
        !out.join("run.json").exists(),
        "killed mid-round: nothing was published at the top"
    );
    // The same settings on resume, but task 3 answers now.
    std::fs::write(&latency, "{}").expect("latency");

    let r = planwave(["resume"]).arg(&out).run();
    r.expect_ok();
    assert!(
        r.stderr
            .contains("resuming round 1: 3 of 5 tasks already completed"),
        "{}",
        r.stderr
    );
    // Round 1's completed tasks were not sent to the model again; the others ran once.
    let round1 = out.join("rounds/1");
    for (id, calls) in [("1", 1), ("2", 1), ("4", 1), ("3", 1), ("5", 1)] {
        assert_eq!(journal_subagent_calls(&round1, id), calls, "task {id}");
    }
    // The loop went on: round 1 evaluated (40) and reflected on, round 2 reached 96.
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "correctness", "{run}");
    let rounds = run["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[0]["correctness"], 40.0);
    assert_eq!(rounds[1]["correctness"], 96.0);
    assert!(out.join("rounds/1/reflection.json").is_file());
    assert_eq!(run["best_round"], 2);
    // One run id for the loop, the killed process's.
    let first = events(&round1)[0]["run_id"].clone();
    assert_eq!(run["run_id"], first);

    // Resuming a finished research changes nothing: the loop has stopped.
    let again = planwave(["resume"]).arg(&out).run();
    again.expect_ok();
    let after = read_json(&out.join("run.json"));
    assert_eq!(after["rounds"].as_array().map(Vec::len), Some(2));
    assert_eq!(after["loop_stop_reason"], "correctness");
}
