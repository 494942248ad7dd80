//! Flags over the file for what the engine, the planner and the loop get.

use std::time::Duration;

use planwave_engine::RunConfig;
use planwave_plan::Lang;
use planwave_record::Schedule;

use super::*;

fn file(text: &str) -> ConfigFile {
    ConfigFile::parse(text, None).expect("parse")
}

#[test]
fn unset_flags_leave_the_engine_and_planner_defaults() {
    let s = resolve_settings(&ConfigFile::default(), &env(&[]), &Flags::default()).expect("ok");
    assert_eq!(s.run, RunConfig::default());
    assert_eq!(s.planner, planwave_planner::PlannerConfig::default());
    assert_eq!(s.deadline, None);
    assert!(s.mcp.is_none());
}

#[test]
fn flags_beat_the_file_for_run_limits_budget_and_planner() {
    let f = file(
        "[run]\ntask_timeout_secs = 90\ndeadline_secs = 600\n[prompts]\ncontext_budget_tokens = 500\nlang = \"zh\"\n[planner]\nattempts = 5\n",
    );
    let s = resolve_settings(&f, &env(&[]), &Flags::default()).expect("ok");
    assert_eq!(s.run.task_timeout, Some(Duration::from_secs(90)));
    assert_eq!(s.deadline, Some(Duration::from_secs(600)));
    assert_eq!(s.run.context_budget_tokens, Some(500));
    assert_eq!((s.planner.attempts, s.planner.lang), (5, Some(Lang::Zh)));
    let flags = Flags {
        task_timeout: Some(Duration::from_secs(2)),
        deadline: Some(Duration::from_secs(3)),
        context_budget_tokens: Some(300),
        lang: Some(Lang::En),
        planner_attempts: Some(0),
        schedule: Some(Schedule::Waves),
        retries: Some(4),
        seed: Some(7),
        ..Flags::default()
    };
    let s = resolve_settings(&f, &env(&[]), &flags).expect("ok");
    assert_eq!(s.run.task_timeout, Some(Duration::from_secs(2)));
    assert_eq!(s.deadline, Some(Duration::from_secs(3)));
    assert_eq!(s.run.context_budget_tokens, Some(300));
    assert_eq!(s.planner.lang, Some(Lang::En));
    assert_eq!(s.planner.attempts, 1, "at least the first plan");
    assert_eq!(
        (s.run.schedule, s.run.retry.max_retries),
        (Schedule::Waves, 4)
    );
    assert_eq!(s.run.seed, 7);
}

#[test]
fn the_seed_reaches_the_model_client_with_the_plan_schema() {
    let flags = Flags {
        model: Some("m".into()),
        seed: Some(42),
        ..Flags::default()
    };
    let s = resolve_settings(&ConfigFile::default(), &env(&[]), &flags).expect("ok");
    let c = openai(&s);
    assert_eq!(c.seed, 42);
    assert!(c.plan_schema.is_some());
}

#[test]
fn max_rounds_flag_replaces_the_file_but_a_bad_file_still_fails() {
    let f = file("[orchestrator]\nmax_reflection_rounds = 2\n");
    let flags = Flags {
        max_rounds: Some(7),
        ..Flags::default()
    };
    let s = resolve_settings(&f, &env(&[]), &flags).expect("ok");
    assert_eq!(s.policy.max_rounds, 7);
    let bad = file("[orchestrator]\nmax_reflection_rounds = 0\n");
    let err = resolve_settings(&bad, &env(&[]), &flags).expect_err("zero rounds");
    assert_eq!(
        err.to_string(),
        "[orchestrator] max_reflection_rounds = 0: expected at least 1 round"
    );
    assert_eq!(err.source_name(), "config");
}

#[test]
fn a_bad_file_deadline_fails_even_when_the_flag_replaces_it() {
    let f = file("[run]\ndeadline_secs = 0\n");
    let flags = Flags {
        deadline: Some(Duration::from_secs(1)),
        ..Flags::default()
    };
    let err = resolve_settings(&f, &env(&[]), &flags).expect_err("zero");
    assert_eq!(
        (err.source_name(), err.problems()),
        (
            "config",
            vec!["[run] deadline_secs = 0: expected a positive number of seconds".to_owned()]
        )
    );
}
