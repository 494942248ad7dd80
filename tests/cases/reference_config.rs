//! A `config.toml` in the reference format, accepted as it is, every key doing what it says: the loop's
//! time limit, evaluation without reflection, and step-level reflection choosing the
//! recovery; the ids of evaluations and reflections kept.

use std::path::{Path, PathBuf};

use crate::support::{Planwave, planwave, read_json, tempdir, write_json};

/// The reference `config.toml`, with `overrides` replacing whole lines by key.
fn seed_config(dir: &Path, overrides: &[(&str, &str)]) -> PathBuf {
    let mut text = String::from(
        "[orchestrator]\nmax_reflection_rounds = 5\ntask_timeout_secs = 3600\n\
         enable_auto_reflection = true\nsuccess_threshold = 80.0\n\n\
         [reflection]\nenable_step_level_reflection = true\nmax_step_retries = 3\n\
         max_task_replanning_attempts = 1\n",
    );
    for (key, value) in overrides {
        let start = text.find(&format!("{key} = ")).expect("a seed key");
        let end = start + text[start..].find('\n').expect("line end");
        text.replace_range(start..end, &format!("{key} = {value}"));
    }
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    path
}

fn research(out: &Path, config: &Path) -> Planwave {
    planwave(["research", "Deep analysis of Tesla"])
        .out(out)
        .instant()
        .quiet()
        .opt("--config", config)
}

#[test]
fn step_level_reflection_chooses_the_recovery_and_ids_are_kept() {
    let dir = tempdir();
    let config = seed_config(dir.path(), &[]);
    let out = dir.path().join("r");
    // A fatal failure: the rule alone would replan from it; the reflector says retry.
    let r = research(&out, &config)
        .opt("--sim-task-fail", "1:2:fatal")
        .opt("--sim-step-strategy", "retry_step")
        .run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    let pass = &run["rounds"][0]["passes"][0];
    assert_eq!(pass["recovery"], "retry_step", "{run}");
    assert_eq!(pass["step_reflection"]["strategy"], "retry_step");
    assert!(
        pass["step_reflection"]["analysis"]
            .as_str()
            .is_some_and(|a| a.contains("failed as phrased")),
        "{pass}"
    );
    let kept = read_json(&out.join("rounds/1/step-reflection-pass-1.json"));
    assert_eq!(kept["step-reflection-pass-1"]["strategy"], "retry_step");
    // The step reflection is a reflector call of the round.
    let round = read_json(&out.join("rounds/1/run.json"));
    let reflector = round["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "reflector")
        .count();
    assert_eq!(
        reflector, 1,
        "the step reflection; the round is correct enough to end the loop unreflected"
    );
    // The model's id of the evaluation is kept.
    assert_eq!(run["rounds"][0]["evaluation_id"], "sim-eval-1");
    assert!(run["rounds"][0].get("reflection_id").is_none(), "{run}");

    // Without step-level reflection the rule decides: replan from the failure.
    let plain = seed_config(dir.path(), &[("enable_step_level_reflection", "false")]);
    let out2 = dir.path().join("r2");
    research(&out2, &plain)
        .opt("--sim-task-fail", "1:2:fatal")
        .opt("--sim-step-strategy", "retry_step")
        .run()
        .expect_ok();
    let run2 = read_json(&out2.join("run.json"));
    let pass2 = &run2["rounds"][0]["passes"][0];
    assert_eq!(pass2["recovery"], "replan_from_failure", "{run2}");
    assert!(pass2.get("step_reflection").is_none());
    assert!(!out2.join("rounds/1/step-reflection-pass-1.json").exists());
}

#[test]
fn auto_reflection_off_evaluates_without_reflecting() {
    let dir = tempdir();
    let config = seed_config(dir.path(), &[("enable_auto_reflection", "false")]);
    let out = dir.path().join("r");
    let r = research(&out, &config).opt("--sim-scores", "40").run();
    r.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "auto_reflection_off", "{run}");
    assert_eq!(run["rounds"].as_array().map(Vec::len), Some(1));
    assert!(out.join("rounds/1/evaluation.json").is_file());
    assert!(!out.join("rounds/1/reflection.json").exists());
}

#[test]
fn task_timeout_secs_bounds_the_whole_loop() {
    let dir = tempdir();
    let config = seed_config(dir.path(), &[("task_timeout_secs", "0.3")]);
    // The tasks without prerequisites take a minute: nothing finishes within the limit.
    let slow = write_json(
        dir.path(),
        "slow.json",
        &serde_json::json!({"1": 60000, "2": 60000, "3": 60000}),
    );
    let out = dir.path().join("r");
    let r = research(&out, &config)
        .opt("--sim-latency-file", &slow)
        .run();
    // Cut short like --deadline: exit 4, the round in progress resumable.
    r.expect_code(4);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["loop_stop_reason"], "timeout", "{run}");
    assert_eq!(run["stop_reason"], "deadline");

    // A limit that is not a positive number of seconds is refused before anything runs.
    let bad = seed_config(dir.path(), &[("task_timeout_secs", "0")]);
    let r = research(&dir.path().join("r2"), &bad).run();
    r.expect_code(2);
    assert!(
        r.stderr.contains(
            "[orchestrator] task_timeout_secs = 0: expected a positive number of seconds"
        ),
        "{}",
        r.stderr
    );
}
