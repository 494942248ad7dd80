//! A job message as a worker receives it: input from outside, like an HTTP body. Anyone who
//! may publish on `planwave.jobs.>` can send one, so every field is checked here, where it
//! is decoded, before any of it names a key, a subject or a path: the batch by the rule of
//! `batch --batch NAME`, the id by the rule of a job file's ids, the directory as the plain
//! name `resolve_jobs` makes, the work as the spec's [`Work`] (decoded by serde, unknown
//! fields refused) with its plan validated as a plan, and the options as the spec's
//! [`JobOptions`] of which only `meta` may be set: the rest is the worker's own (model,
//! keys, config files, limits), so a message that sets any of it is refused rather than
//! trusted (see `submit`'s rule of what travels). A worker reads no file a message names: a
//! plan job's plan is inline, its path always the job's own `plan.json`.
//!
//! A message of the previous version (its job as a raw job line under `job`, or its options
//! grouped by kind under `exec`, `model`) is refused with a terminal record that says so:
//! submit the batch again with this version.
//!
//! Refusals are final (the worker terminates the message rather than letting it come back)
//! and name every problem found, not only the first.

use planwave_config::spec::{JobOptions, ResearchOptions, Work};
use planwave_plan::ValidatedPlan;
use serde_json::Value;

use crate::names::{check_batch_name, job_subject};
use crate::submit::{JobMessage, PLAN_FILE};

/// Longest job id a message may carry, in bytes. Ids become hex in subjects and keys, and a
/// NATS control line (subject included) is at most 4096 bytes by default.
pub const MAX_ID_BYTES: usize = 1000;
/// Longest job directory name: `resolve_jobs` makes at most 64 characters, a hash and a
/// counter.
const MAX_DIR_BYTES: usize = 128;
const KINDS: [&str; 4] = ["goal", "plan", "plan_file", "template"];

/// Why a message is not a job this worker will run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", problems.join("; "))]
pub struct BadMessage {
    /// The message's batch and job id when both are valid: the job's record can say why.
    pub job: Option<(String, String)>,
    /// Every problem, each naming the field and the offending value.
    pub problems: Vec<String>,
}

impl BadMessage {
    fn one(problem: String) -> BadMessage {
        BadMessage {
            job: None,
            problems: vec![problem],
        }
    }
}

/// Decodes and checks a message that arrived on `subject`.
pub(crate) fn decode(subject: &str, payload: &[u8]) -> Result<JobMessage, BadMessage> {
    let value: Value =
        serde_json::from_slice(payload).map_err(|e| BadMessage::one(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(BadMessage::one(format!(
            "not a job message: expected a JSON object, found {}",
            planwave_batch::json_kind(&value)
        )));
    }
    let old = if value.get("job").is_some() && value.get("work").is_none() {
        Some("its job as a raw job line under `job`")
    } else if ["exec", "model"]
        .iter()
        .any(|group| value["options"].get(group).is_some())
    {
        Some("its options grouped by kind under `exec`, `model`")
    } else {
        None
    };
    if let Some(what) = old {
        return Err(BadMessage {
            job: valid_job(&value),
            problems: vec![format!(
                "a message of the previous version ({what}): not run; submit the batch again \
                 with this version"
            )],
        });
    }
    let msg: JobMessage = serde_json::from_value(value.clone()).map_err(|e| BadMessage {
        job: valid_job(&value),
        problems: vec![format!("not a job message: {e}")],
    })?;
    let problems = check(subject, &msg);
    if problems.is_empty() {
        Ok(msg)
    } else {
        Err(BadMessage {
            job: valid_job(&value),
            problems,
        })
    }
}

/// Batch and id of a message that is otherwise broken, when those two are valid.
fn valid_job(value: &Value) -> Option<(String, String)> {
    let batch = value.get("batch")?.as_str()?;
    let id = value.get("id")?.as_str()?;
    (check_batch_name(batch).is_ok() && check_id(id).is_ok()).then(|| (batch.into(), id.into()))
}

fn check(subject: &str, msg: &JobMessage) -> Vec<String> {
    let mut problems = Vec::new();
    match check_batch_name(&msg.batch) {
        Err(e) => problems.push(e.to_string()),
        Ok(()) if subject != job_subject(&msg.batch) => problems.push(format!(
            "batch {:?} arrived on subject {subject:?}, not {:?}",
            msg.batch,
            job_subject(&msg.batch)
        )),
        Ok(()) => {}
    }
    if let Err(e) = check_id(&msg.id) {
        problems.push(e);
    }
    if let Err(e) = check_dir(&msg.dir) {
        problems.push(e);
    }
    if msg.line == 0 {
        problems.push("line 0: line numbers start at 1".into());
    }
    if !KINDS.contains(&msg.kind.as_str()) {
        problems.push(format!(
            "kind {:?}: expected one of {}",
            msg.kind,
            KINDS.join(", ")
        ));
    }
    problems.extend(check_work(msg));
    problems.extend(check_options(&msg.options));
    if let Some(Err(e)) = msg.max_subagents.map(check_max_subagents) {
        problems.push(e);
    }
    problems
}

/// Most subagents a batch may cap its jobs at: each is a lease key in KV.
pub const MAX_SUBAGENTS: u64 = 10_000;

/// A batch's cap on subagents in flight: 1 to [`MAX_SUBAGENTS`].
pub(crate) fn check_max_subagents(n: u64) -> Result<(), String> {
    if (1..=MAX_SUBAGENTS).contains(&n) {
        Ok(())
    } else {
        Err(format!("max_subagents {n}: expected 1 to {MAX_SUBAGENTS}"))
    }
}

/// A job id as a job file takes it (a non-blank string), short enough for a subject.
pub(crate) fn check_id(id: &str) -> Result<(), String> {
    if id.trim().is_empty() {
        Err(format!("job id {id:?}: must not be empty"))
    } else if id.len() > MAX_ID_BYTES {
        Err(format!(
            "job id of {} bytes: at most {MAX_ID_BYTES}",
            id.len()
        ))
    } else {
        Ok(())
    }
}

/// A job directory: one plain name of `A-Z a-z 0-9 _ -`, as `resolve_jobs` makes them.
pub(crate) fn check_dir(dir: &str) -> Result<(), String> {
    let ok = !dir.is_empty()
        && dir.len() <= MAX_DIR_BYTES
        && dir
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "job directory {dir:?}: use 1-{MAX_DIR_BYTES} letters, digits, '_' or '-'"
        ))
    }
}

/// The work: a goal, or a plan given inline and valid as a plan (checked again against the
/// worker's tools where it runs), matching the message's kind; a batch's jobs have no
/// recover kind and stream no plan.
fn check_work(msg: &JobMessage) -> Vec<String> {
    let mut problems = Vec::new();
    match &msg.work {
        Work::Goal {
            goal,
            research,
            stream_plan,
        } => {
            if msg.kind != "goal" {
                problems.push(format!(
                    "work: a goal, but the message's kind is {:?}",
                    msg.kind
                ));
            }
            if goal.trim().is_empty() {
                problems.push("work: the goal must not be empty".into());
            }
            // Its answers are the job line's own (bounded when read); every other research
            // option is the worker's.
            let own = ResearchOptions {
                planner: planwave_config::spec::PlannerOptions {
                    answers: research.planner.answers.clone(),
                    ..Default::default()
                },
                ..ResearchOptions::default()
            };
            if *research != own {
                problems.push(
                    "work: research options are the worker's own; a message sets none".into(),
                );
            }
            if *stream_plan {
                problems.push("work: stream_plan: a batch's goal jobs stream no plan".into());
            }
            if msg.plan.is_some() {
                problems.push("plan: a goal job carries no plan".into());
            }
        }
        Work::Plan { plan, recover } => {
            if msg.kind == "goal" {
                problems.push("work: a plan, but the message's kind is \"goal\"".into());
            }
            if plan.as_os_str() != PLAN_FILE {
                problems.push(format!(
                    "work: plan {:?} names a file; a message carries its plan inline \
                     (the work's plan is always {PLAN_FILE:?})",
                    plan.display().to_string()
                ));
            }
            if *recover {
                problems.push("work: recover: a batch's plan jobs have no recover kind".into());
            }
            match &msg.plan {
                None => problems.push("plan: a plan job's message carries its plan".into()),
                Some(spec) => {
                    if let Err(e) = ValidatedPlan::new(spec.clone()) {
                        let each: Vec<String> = e.0.iter().map(ToString::to_string).collect();
                        problems.push(format!("plan: invalid plan: {}", each.join("; ")));
                    }
                }
            }
        }
    }
    problems
}

/// Of the job's options only its metadata travels; the rest is the worker's own.
fn check_options(options: &JobOptions) -> Option<String> {
    let mut rest = options.clone();
    rest.run.meta = Default::default();
    (rest != JobOptions::default()).then(|| {
        "options: only `meta` travels with a job; the model, keys, config files and limits \
         are the worker's own"
            .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn good() -> Value {
        json!({"batch": "q3", "id": "a.b", "line": 1, "kind": "goal", "dir": "a_b-1f2e3d4c",
               "work": {"goal": {"goal": "分析特斯拉", "stream_plan": false}},
               "options": {"meta": {"region": "eu"}}})
    }

    fn good_plan() -> Value {
        json!({"batch": "q3", "id": "p1", "line": 2, "kind": "template", "dir": "p1",
               "work": {"plan": {"plan": "plan.json"}},
               "plan": {"topic": "t", "tasks": [{"id": "t1", "title": "one", "description": "d"}]}})
    }

    fn problems(subject: &str, v: &Value) -> Vec<String> {
        match decode(subject, v.to_string().as_bytes()) {
            Ok(_) => Vec::new(),
            Err(e) => e.problems,
        }
    }

    #[test]
    fn a_job_message_as_submit_makes_it_is_accepted() {
        let m = decode("planwave.jobs.q3", good().to_string().as_bytes()).expect("valid");
        assert_eq!((m.batch.as_str(), m.id.as_str()), ("q3", "a.b"));
    }

    #[test]
    fn paths_in_the_batch_or_directory_are_refused_with_every_problem_named() {
        let mut v = good();
        v["batch"] = json!("/srv/data/victim");
        v["dir"] = json!("../x");
        assert_eq!(
            problems("planwave.jobs.q3", &v),
            [
                "batch name \"/srv/data/victim\": use 1-64 letters, digits, '_' or '-'",
                "job directory \"../x\": use 1-128 letters, digits, '_' or '-'",
            ]
        );
        let mut v = good();
        v["batch"] = json!("..");
        let e = decode("planwave.jobs.q3", v.to_string().as_bytes()).expect_err("..");
        assert_eq!(e.job, None, "no record is named by an invalid batch");
    }

    #[test]
    fn a_message_on_another_batchs_subject_or_with_mismatched_work_is_refused() {
        assert_eq!(
            problems("planwave.jobs.other", &good()),
            ["batch \"q3\" arrived on subject \"planwave.jobs.other\", not \"planwave.jobs.q3\""]
        );
        let mut v = good();
        v["kind"] = json!("plan");
        v["work"]["goal"]["stream_plan"] = json!(true);
        let e = decode("planwave.jobs.q3", v.to_string().as_bytes()).expect_err("mismatch");
        assert_eq!(e.job, Some(("q3".into(), "a.b".into())));
        assert_eq!(
            e.problems,
            [
                "work: a goal, but the message's kind is \"plan\"",
                "work: stream_plan: a batch's goal jobs stream no plan",
            ]
        );
    }

    #[test]
    fn a_batchs_cap_on_subagents_is_a_positive_number_within_bounds() {
        let mut v = good();
        v["max_subagents"] = json!(3);
        let m = decode("planwave.jobs.q3", v.to_string().as_bytes()).expect("valid");
        assert_eq!(m.max_subagents, Some(3));
        v["max_subagents"] = json!(0);
        assert_eq!(
            problems("planwave.jobs.q3", &v),
            ["max_subagents 0: expected 1 to 10000"]
        );
        v["max_subagents"] = json!(-1);
        let p = problems("planwave.jobs.q3", &v);
        assert!(p[0].starts_with("not a job message: "), "{p:?}");
    }

    #[test]
    fn a_plan_job_carries_a_valid_plan_inline_and_names_no_other_file() {
        let m = decode("planwave.jobs.q3", good_plan().to_string().as_bytes()).expect("valid");
        assert_eq!(m.plan.map(|p| p.tasks.len()), Some(1));
        let mut v = good_plan();
        v["work"]["plan"] = json!({"plan": "/etc/passwd", "recover": true});
        v.as_object_mut().map(|o| o.remove("plan"));
        assert_eq!(
            problems("planwave.jobs.q3", &v),
            [
                "work: plan \"/etc/passwd\" names a file; a message carries its plan inline (the work's plan is always \"plan.json\")",
                "work: recover: a batch's plan jobs have no recover kind",
                "plan: a plan job's message carries its plan",
            ]
        );
        let mut v = good_plan();
        v["plan"]["tasks"] = json!([]);
        let p = problems("planwave.jobs.q3", &v);
        assert!(
            p.len() == 1 && p[0].starts_with("plan: invalid plan: "),
            "{p:?}"
        );
    }

    #[test]
    fn the_workers_own_options_and_unknown_fields_never_come_in_a_message() {
        let mut v = good();
        v["options"]["api_key"] = json!("sk-secret");
        let e = decode("planwave.jobs.q3", v.to_string().as_bytes()).expect_err("llm");
        assert_eq!(e.job, Some(("q3".into(), "a.b".into())));
        assert!(e.problems[0].starts_with("not a job message: "), "{e:?}");
        let mut v = good();
        v["options"]["concurrency"] = json!(3);
        v["work"]["goal"]["research"] = json!({"max_rounds": 9});
        let p = problems("planwave.jobs.q3", &v);
        assert_eq!(
            p,
            [
                "work: research options are the worker's own; a message sets none",
                "options: only `meta` travels with a job; the model, keys, config files and limits are the worker's own",
            ]
        );
        let mut v = good();
        v["extra"] = json!(1);
        assert!(problems("planwave.jobs.q3", &v)[0].contains("unknown field `extra`"));
    }

    #[test]
    fn a_message_of_the_previous_version_is_refused_saying_so() {
        let old = json!({"batch": "q3", "id": "a.b", "line": 1, "kind": "goal",
                         "dir": "a_b-1f2e3d4c", "job": {"id": "a.b", "goal": "g"}});
        let e = decode("planwave.jobs.q3", old.to_string().as_bytes()).expect_err("old");
        assert_eq!(
            e.job,
            Some(("q3".into(), "a.b".into())),
            "its record says why"
        );
        assert!(e.problems[0].contains("previous version"), "{e:?}");
        let mut grouped = good();
        grouped["options"] = json!({"exec": {"seed": 0}, "meta": {"region": "eu"}});
        let e = decode("planwave.jobs.q3", grouped.to_string().as_bytes()).expect_err("old");
        assert!(
            e.problems[0].contains("previous version (its options grouped"),
            "{e:?}"
        );
    }

    #[test]
    fn ids_follow_the_job_file_rule_and_fit_in_a_subject() {
        let mut v = good();
        v["id"] = json!("  ");
        assert_eq!(
            problems("planwave.jobs.q3", &v)[0],
            "job id \"  \": must not be empty"
        );
        assert!(check_id(&"x".repeat(MAX_ID_BYTES)).is_ok());
        assert!(check_id(&"x".repeat(MAX_ID_BYTES + 1)).is_err());
    }

    #[test]
    fn non_objects_and_missing_fields_are_clear_refusals() {
        let e = decode("planwave.jobs.q3", b"[1]").expect_err("array");
        assert_eq!(
            e.problems,
            ["not a job message: expected a JSON object, found an array"]
        );
        let mut v = good();
        v.as_object_mut().map(|o| o.remove("dir"));
        let e = decode("planwave.jobs.q3", v.to_string().as_bytes()).expect_err("no dir");
        assert_eq!(e.problems, ["not a job message: missing field `dir`"]);
        assert_eq!(e.job, Some(("q3".into(), "a.b".into())));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,12}".prop_map(Value::String),
            prop_oneof![
                Just("batch"),
                Just("id"),
                Just("dir"),
                Just("work"),
                Just("goal"),
                Just("plan.json")
            ]
            .prop_map(|s| Value::String(s.into())),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            let keys = prop_oneof![
                Just("batch".to_string()),
                Just("id".to_string()),
                Just("line".to_string()),
                Just("kind".to_string()),
                Just("dir".to_string()),
                Just("work".to_string()),
                Just("options".to_string()),
                Just("meta".to_string()),
                Just("goal".to_string()),
                Just("plan".to_string()),
                ".{0,6}",
            ];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(keys, inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A refusal is never empty and never blank: someone reads it.
    fn clear(e: &BadMessage) -> bool {
        !e.problems.is_empty() && e.problems.iter().all(|p| !p.trim().is_empty())
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_and_every_refusal_says_why(
            bytes in prop::collection::vec(any::<u8>(), 0..256),
        ) {
            if let Err(e) = decode("planwave.jobs.q3", &bytes) {
                prop_assert!(clear(&e), "{e:?}");
            }
        }

        #[test]
        fn arbitrary_json_never_panics_and_what_passes_is_confined(v in json_value()) {
            match decode("planwave.jobs.q3", v.to_string().as_bytes()) {
                Ok(m) => {
                    prop_assert!(check_batch_name(&m.batch).is_ok());
                    prop_assert!(check_dir(&m.dir).is_ok());
                }
                Err(e) => prop_assert!(clear(&e), "{e:?}"),
            }
        }

        #[test]
        fn any_one_field_of_a_good_message_replaced_is_accepted_only_if_valid(
            field in prop_oneof![Just("batch"), Just("id"), Just("line"), Just("kind"),
                                 Just("dir"), Just("work"), Just("options"), Just("plan")],
            replacement in json_value(),
        ) {
            let mut v = good();
            v[field] = replacement;
            match decode("planwave.jobs.q3", v.to_string().as_bytes()) {
                Ok(m) => {
                    prop_assert_eq!(m.batch, "q3");
                    prop_assert!(check_dir(&m.dir).is_ok());
                    prop_assert!(check_id(&m.id).is_ok());
                }
                Err(e) => prop_assert!(clear(&e), "{e:?}"),
            }
        }
    }
}
