use std::time::Duration;

use serde_json::{Map, Value, json};

use super::*;

fn map(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn a_spec_written_by_hand_reads_with_the_flags_defaults() {
    let spec: JobSpec = serde_json::from_value(json!({
        "work": {"plan": {"plan": "p.json"}},
        "out": "runs/a",
        "options": {"deadline": 30, "task_timeout": "250ms",
                    "sim_fail": "1, 2", "sim_flaky": [3], "sim_latency_ms": 0,
                    "meta": {"client": "acme", "n": 2},
                    "host": {"config": "/etc/planwave.toml", "mcp_config": "mcp.json"}}
    }))
    .unwrap();
    let o = &spec.options;
    assert_eq!(o.run.exec.deadline, Some(Duration::from_secs(30)));
    assert_eq!(o.run.exec.task_timeout, Some(Duration::from_millis(250)));
    assert_eq!(o.run.exec.retries, 1, "the flag's default");
    assert_eq!(o.run.sim_tasks.sim_fail, ["1", "2"]);
    assert_eq!(o.run.sim_tasks.sim_flaky, ["3"]);
    assert_eq!(o.run.sim.sim_sigma, 1.0);
    assert_eq!(
        o.run.meta.meta,
        [("client".into(), "acme".into()), ("n".into(), "2".into())]
    );
    assert_eq!(o.host.llm.config, Some("/etc/planwave.toml".into()));
    assert_eq!(o.host.mcp.mcp_config, Some("mcp.json".into()));
    // What is written reads back the same.
    let again: JobSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
    assert_eq!(again, spec);
}

#[test]
fn every_option_is_named_as_its_flag_in_json() {
    let spec = JobSpec {
        work: Work::Goal {
            goal: "g".into(),
            research: ResearchOptions::default(),
            stream_plan: true,
        },
        out: "o".into(),
        options: JobOptions::default(),
    };
    let v = serde_json::to_value(&spec).unwrap();
    let options = v["options"].as_object().unwrap();
    for flag in [
        "seed",
        "sim_latency_ms",
        "sim_scores",
        "context_budget",
        "meta",
        "host",
    ] {
        assert!(options.contains_key(flag), "{flag} in {v}");
    }
    let host = v["options"]["host"].as_object().unwrap();
    for flag in [
        "config",
        "llm_base_url",
        "prompts",
        "sim_latency_file",
        "mcp_config",
    ] {
        assert!(host.contains_key(flag), "{flag} in {v}");
    }
    let research = v["work"]["goal"]["research"].as_object().unwrap();
    for flag in ["max_rounds", "lang", "plan_cache"] {
        assert!(research.contains_key(flag), "{flag} in {v}");
    }
}

#[test]
fn unknown_options_and_wrong_types_are_errors_naming_the_field() {
    let err = serde_json::from_value::<ExecOptions>(json!({"retrys": 2})).unwrap_err();
    assert!(err.to_string().contains("unknown field `retrys`"), "{err}");
    let err = serde_json::from_value::<JobOptions>(json!({"retrys": 2})).unwrap_err();
    assert!(err.to_string().contains("unknown field `retrys`"), "{err}");
    let err = serde_json::from_value::<ExecOptions>(json!({"deadline": "-1s"})).unwrap_err();
    assert!(err.to_string().contains("cannot be negative"), "{err}");
    let err = serde_json::from_value::<ExecOptions>(json!({"concurrency": 0})).unwrap_err();
    assert!(err.to_string().contains("nonzero"), "{err}");
    let err = serde_json::from_value::<SimOptions>(json!({"sim_planner_faults": "cycle,oops"}))
        .unwrap_err();
    assert!(err.to_string().contains("\"oops\""), "{err}");
    let err = serde_json::from_value::<MetaOptions>(json!({"bad key": "v"})).unwrap_err();
    assert!(err.to_string().contains("metadata key"), "{err}");
}

fn plan_work() -> Work {
    Work::Plan {
        plan: "plan.json".into(),
        recover: false,
    }
}

fn goal_work() -> Work {
    Work::Goal {
        goal: "g".into(),
        research: ResearchOptions::default(),
        stream_plan: true,
    }
}

#[test]
fn a_request_sets_the_spec_as_the_flags_would_on_the_hosts_own_options() {
    let o = RequestOptions::from_map(&map(json!({
        "sim_latency_ms": 300, "sim_fail": "4", "sim_flaky": ["1", 2], "sim_scores": "40,90",
        "meta": {"client": "acme"}, "seed": 7, "deadline": "2m"
    })))
    .unwrap();
    let host = HostOptions {
        prompts: Some("/srv/prompts".into()),
        ..HostOptions::default()
    };
    let spec = o.job(plan_work(), "out".into(), host.clone()).unwrap();
    let run = &spec.options.run;
    assert_eq!(run.sim.sim_latency_ms, 300.0);
    assert_eq!(run.sim_tasks.sim_fail, ["4"]);
    assert_eq!(run.sim_tasks.sim_flaky, ["1", "2"]);
    assert_eq!(run.reflect.sim_scores, [40.0, 90.0]);
    assert_eq!(run.meta.meta, [("client".into(), "acme".into())]);
    assert_eq!(run.exec.seed, 7);
    assert_eq!(run.exec.deadline, Some(Duration::from_secs(120)));
    assert_eq!(run.exec.retries, 1, "unset keeps the flag's default");
    assert_eq!(spec.options.host, host);
    let o = RequestOptions::from_map(&map(json!({"max_rounds": 2, "lang": "en"}))).unwrap();
    let spec = o.job(goal_work(), "out".into(), host).unwrap();
    let Work::Goal { research, .. } = &spec.work else {
        panic!("a goal")
    };
    assert_eq!(research.rounds.max_rounds, Some(2));
    assert_eq!(research.planner.lang, Some(LangArg::En));
}

#[test]
fn a_request_naming_the_hosts_options_or_bad_values_gets_every_problem() {
    let err = RequestOptions::from_map(&map(json!({
        "config": "/etc/passwd", "llm_base_url": "http://x", "sim_latency_ms": "soon",
        "concurrency": 0, "plan_cache": "/tmp", "sim_latency_file": "/etc/shadow",
        "max_rounds": 0, "force": true
    })))
    .unwrap_err();
    let named = |i: usize| err[i].split(':').next().unwrap().to_owned();
    assert_eq!(
        (0..err.len()).map(named).collect::<Vec<_>>(),
        [
            "options.concurrency",
            "options.config",
            "options.force",
            "options.llm_base_url",
            "options.max_rounds",
            "options.plan_cache",
            "options.sim_latency_file",
            "options.sim_latency_ms",
        ],
        "{err:?}"
    );
    assert!(err[0].contains("nonzero"), "{err:?}");
    assert_eq!(err[1], "options.config: unknown field `config`");
    assert!(
        err[7].starts_with("options.sim_latency_ms: invalid type"),
        "{err:?}"
    );
    let o =
        RequestOptions::from_map(&map(json!({"max_rounds": 2, "plan_format": "steps"}))).unwrap();
    assert_eq!(
        o.job(plan_work(), "o".into(), HostOptions::default())
            .unwrap_err(),
        [
            "options.max_rounds: only for a goal (research)",
            "options.plan_format: only for a goal (research)"
        ]
    );
}

#[test]
fn batch_api_timing_goes_only_with_batch_api() {
    let o = RequestOptions::from_map(&map(json!({
        "batch_api": true, "batch_linger": "1500ms", "batch_poll": 1, "batch_poll_max": "2s"
    })))
    .unwrap();
    let b = &o.run.batch;
    assert!(b.batch_api);
    assert_eq!(b.batch_linger, Some(Duration::from_millis(1500)));
    assert_eq!(b.batch_poll, Some(Duration::from_secs(1)));
    assert_eq!(b.batch_poll_max, Some(Duration::from_secs(2)));
    assert_eq!(
        RequestOptions::from_map(&map(json!({"batch_poll": "1s"}))).unwrap_err(),
        ["options.batch_poll: only with batch_api"]
    );
    assert!(RequestOptions::from_map(&map(json!({"batch_linger": "0s"}))).is_err());
}

#[test]
fn a_request_may_not_set_intervals_under_a_second_nor_a_retry_backoff_under_100ms() {
    let problems = RequestOptions::from_map(&map(json!({
        "batch_api": true, "batch_linger": "999ms", "batch_poll": "1ms", "batch_poll_max": "1s",
        "retry_backoff_ms": 0
    })))
    .unwrap_err();
    assert_eq!(problems.len(), 3, "{problems:?}");
    for (p, name) in problems
        .iter()
        .zip(["batch_linger", "batch_poll", "retry_backoff_ms"])
    {
        assert!(p.starts_with(&format!("options.{name}: at least ")), "{p}");
    }
    assert!(RequestOptions::from_map(&map(json!({"retry_backoff_ms": 100}))).is_ok());
}
