use std::time::Duration;

use serde_json::json;

use super::*;

#[test]
fn a_spec_written_by_hand_reads_with_the_flags_defaults() {
    let spec: JobSpec = serde_json::from_value(json!({
        "work": {"plan": {"plan": "p.json"}},
        "out": "runs/a",
        "options": {"exec": {"deadline": 30, "task_timeout": "250ms"},
                    "model": {"sim": {"sim_fail": "1, 2", "sim_flaky": [3], "sim_latency_ms": 0}},
                    "meta": {"client": "acme", "n": 2}}
    }))
    .unwrap();
    let o = &spec.options;
    assert_eq!(o.exec.deadline, Some(Duration::from_secs(30)));
    assert_eq!(o.exec.task_timeout, Some(Duration::from_millis(250)));
    assert_eq!(o.exec.retries, 1, "the flag's default");
    assert_eq!(o.model.sim.sim_fail, ["1", "2"]);
    assert_eq!(o.model.sim.sim_flaky, ["3"]);
    assert_eq!(o.model.sim.sim_sigma, 1.0);
    assert_eq!(
        o.meta.meta,
        [("client".into(), "acme".into()), ("n".into(), "2".into())]
    );
    // What is written reads back the same.
    let again: JobSpec = serde_json::from_value(serde_json::to_value(&spec).unwrap()).unwrap();
    assert_eq!(again, spec);
}

#[test]
fn unknown_options_and_wrong_types_are_errors_naming_the_field() {
    let err = serde_json::from_value::<ExecOptions>(json!({"retrys": 2})).unwrap_err();
    assert!(err.to_string().contains("unknown field `retrys`"), "{err}");
    let err = serde_json::from_value::<ExecOptions>(json!({"deadline": "-1s"})).unwrap_err();
    assert!(err.to_string().contains("cannot be negative"), "{err}");
    let err = serde_json::from_value::<SimOptions>(json!({"sim_planner_faults": "cycle,oops"}))
        .unwrap_err();
    assert!(err.to_string().contains("\"oops\""), "{err}");
    let err = serde_json::from_value::<MetaOptions>(json!({"bad key": "v"})).unwrap_err();
    assert!(err.to_string().contains("metadata key"), "{err}");
}
