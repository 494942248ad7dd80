//! The one resume: what kind of run directory `DIR` is (a plain run, `run --recover`, a
//! `research`), read from its recorded spec and its layout in this one place, and the job
//! going on from there. `planwave resume`, the server's resume endpoint and anything else
//! that continues a run call [`Resumable::open`] then [`resume`]; a batch's job (local, or
//! on a queue worker), whose spec the batch holds rather than the directory, calls
//! [`Resumable::with_spec`] then [`resume_in`] with what the batch shares ([`Shared`]).

use planwave_engine::RunRequest;
use std::path::{Path, PathBuf};

use planwave_config::spec::JobSpec;

use super::{Job, JobIo, JobOutcome, Shared, loop_job, recover_goal};
use crate::{Execution, InvalidInput, Invocation, execute_plan, load_plan, lock_run_dir};

/// What an interrupted job goes on as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeKind {
    /// One execution from its journal (`run`; also a `research` stopped before its first
    /// round had a directory, when it has a plan).
    Run,
    /// `run --recover`: its one round goes on recovering (tasks completed kept).
    Recover,
    /// `research`: the round in progress, then the loop to its stop condition.
    Research,
}

/// A run directory that can be resumed: its recorded spec and what kind of job it was.
pub struct Resumable {
    /// Canonical.
    pub dir: PathBuf,
    pub spec: JobSpec,
    pub invocation: Invocation,
    pub kind: ResumeKind,
}

impl Resumable {
    /// The run directory `dir` as something to resume, or why it is not one.
    pub fn open(dir: &Path) -> Result<Resumable, InvalidInput> {
        let dir = dir.canonicalize().map_err(|e| {
            InvalidInput::one(
                dir.display().to_string(),
                format!("cannot open the run directory: {e}"),
            )
        })?;
        // A run killed before it recorded anything has nothing to resume; say so as a
        // plain run would.
        if !dir.join("invocation.json").is_file() {
            crate::resumable_dir(&dir)?;
        }
        let invocation = Invocation::read(&dir)?;
        let spec = invocation.spec.clone();
        let kind = kind_of(&dir, &spec)?;
        Ok(Resumable {
            dir,
            spec,
            invocation,
            kind,
        })
    }

    /// The run directory `dir` of a batch's job, whose spec the batch holds (its message on a
    /// queue), as something to resume, or why it is not one.
    pub fn with_spec(dir: &Path, spec: JobSpec) -> Result<Resumable, InvalidInput> {
        let dir = dir.canonicalize().map_err(|e| {
            InvalidInput::one(
                dir.display().to_string(),
                format!("cannot open the run directory: {e}"),
            )
        })?;
        let kind = kind_of(&dir, &spec)?;
        Ok(Resumable {
            invocation: Invocation::job(&spec, dir.clone()),
            dir,
            spec,
            kind,
        })
    }
}

/// What kind of job the run directory `dir` of `spec` goes on as: every kind is told apart
/// here. A loop keeps its rounds under rounds/: it goes on from there, even when killed
/// before anything was published at the top.
fn kind_of(dir: &Path, spec: &JobSpec) -> Result<ResumeKind, InvalidInput> {
    let rounds = dir.join("rounds").is_dir();
    Ok(match (&spec.work, rounds) {
        (planwave_config::spec::Work::Goal { .. }, true) => ResumeKind::Research,
        (planwave_config::spec::Work::Plan { recover: true, .. }, true) => ResumeKind::Recover,
        _ => {
            crate::resumable_dir(dir)?;
            ResumeKind::Run
        }
    })
}

/// Goes on with `r` (the job's settings resolved from `r.spec` and its resources prepared
/// by the front end): a run from its journal, a loop from its rounds.
pub async fn resume(r: &Resumable, mut job: Job<'_>, io: &JobIo<'_>) -> crate::Result<JobOutcome> {
    job.budgeted(&r.dir)?;
    // The run's provider batches (a batch's job joins them where the batch runs it).
    let _batches = match &job.resources.batch {
        Some(_) => {
            let dir = crate::open_run_dir(&r.dir)?;
            job.resources.join_batches(&dir).await?
        }
        None => None,
    };
    resume_in(r, job, io, &Shared::default()).await
}

/// As [`resume`], with what a batch shares with its job (its run directory as opened, the
/// journal's mirror, the run slots).
pub async fn resume_in(
    r: &Resumable,
    job: Job<'_>,
    io: &JobIo<'_>,
    shared: &Shared,
) -> crate::Result<JobOutcome> {
    match r.kind {
        ResumeKind::Run => resume_run(&r.dir, job, io, shared).await,
        ResumeKind::Recover | ResumeKind::Research => {
            let out = shared.open(&r.dir)?;
            let _lock = lock_run_dir(&out)?;
            let (goal, planned) = if r.kind == ResumeKind::Recover {
                let plan = load_plan(&r.dir.join("rounds/1/plan.json"), io.notes)?;
                (recover_goal(&plan), false)
            } else {
                (r.spec.goal().unwrap_or_default().to_owned(), true)
            };
            let run_id = uuid::Uuid::new_v4();
            let stream = (io.stream)(run_id)?;
            let outcome = loop_job(
                &job,
                &out,
                goal,
                None,
                true,
                run_id,
                stream,
                io,
                shared.slots.clone(),
            )
            .await?;
            Ok(JobOutcome::Loop {
                outcome,
                out,
                planned,
            })
        }
    }
}

/// One execution going on from its journal.
async fn resume_run(
    dir: &Path,
    job: Job<'_>,
    io: &JobIo<'_>,
    shared: &Shared,
) -> crate::Result<JobOutcome> {
    let mut point = crate::resume_opened(shared.open(dir)?, io.notes, shared.mirror.clone())?;
    io.watch
        .resumed(point.run_id, point.preset.len(), point.plan.len());
    let stream = (io.stream)(point.run_id)?;
    let out = point.out.clone();
    let result = execute_plan(
        Execution {
            run: RunRequest {
                run_id: point.run_id,
                config: job.settings.run.clone(),
                deadline: job.settings.deadline,
                preset: std::mem::take(&mut point.preset),
                slots: shared.slots.clone(),
                cancel: io.cancel.clone(),
                ..job
                    .resources
                    .request(point.plan.clone(), &point.out, &point.events)
            },
            resources: job.resources.clone(),
            stream,
            root_span: io.root_span,
        },
        io.watch,
    )
    .await;
    // Unlocked before the caller can tell anyone the run ended.
    drop(point);
    Ok(JobOutcome::Run {
        result: Box::new(result?),
        out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A run directory with `invocation` recorded and `files` (relative paths) present.
    fn dir_with(invocation: serde_json::Value, files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("invocation.json"), invocation.to_string()).unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "{}").unwrap();
        }
        dir
    }

    fn spec(work: serde_json::Value) -> serde_json::Value {
        json!({"spec": {"work": work, "out": "o"}, "cwd": "/"})
    }

    #[test]
    fn every_kind_of_run_directory_is_told_apart_in_one_place() {
        let plan = json!({"plan": {"plan": "p.json"}});
        let recover = json!({"plan": {"plan": "p.json", "recover": true}});
        let goal = json!({"goal": {"goal": "g"}});
        for (work, files, kind) in [
            (&plan, &["plan.json"][..], ResumeKind::Run),
            (&recover, &["rounds/1/plan.json"][..], ResumeKind::Recover),
            // A run --recover killed before its round had a directory is a plain run.
            (&recover, &["plan.json"][..], ResumeKind::Run),
            (&goal, &["rounds/1/plan.json"][..], ResumeKind::Research),
        ] {
            let dir = dir_with(spec(work.clone()), files);
            let r = Resumable::open(dir.path()).unwrap();
            assert_eq!(r.kind, kind, "{work} with {files:?}");
        }
    }

    #[test]
    fn a_batch_job_whose_spec_the_batch_holds_is_told_apart_the_same_way() {
        let spec = |work: serde_json::Value| -> JobSpec {
            serde_json::from_value(json!({"work": work, "out": "o"})).unwrap()
        };
        let goal = spec(json!({"goal": {"goal": "g", "stream_plan": false}}));
        let plan = spec(json!({"plan": {"plan": "plan.json"}}));
        // No invocation.json: the batch recorded none for its job.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("rounds/1")).unwrap();
        let r = Resumable::with_spec(dir.path(), goal.clone()).unwrap();
        assert_eq!(r.kind, ResumeKind::Research);
        assert_eq!(r.invocation.spec, goal);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("events.jsonl"), "").unwrap();
        let err = Resumable::with_spec(dir.path(), plan.clone())
            .err()
            .unwrap();
        assert!(err.problems[0].starts_with("no plan.json"), "{err:?}");
        std::fs::write(dir.path().join("plan.json"), "{}").unwrap();
        let r = Resumable::with_spec(dir.path(), plan).unwrap();
        assert_eq!(r.kind, ResumeKind::Run);
    }

    #[test]
    fn a_run_without_a_plan_or_a_record_has_nothing_to_resume() {
        let dir = dir_with(spec(json!({"plan": {"plan": "p.json"}})), &[]);
        let err = Resumable::open(dir.path()).err().unwrap();
        assert!(err.problems[0].starts_with("no plan.json"), "{err:?}");
        let empty = tempfile::tempdir().unwrap();
        let err = Resumable::open(empty.path()).err().unwrap();
        assert!(
            err.problems[0].contains("not a planwave run directory"),
            "{err:?}"
        );
    }
}
