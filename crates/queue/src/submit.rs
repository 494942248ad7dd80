//! Submitting a job file: a record per job in KV (created only if absent) and a message per
//! new job on the work queue, with message id `batch.job` so even a crash between the two
//! and a resubmission cannot queue a job twice.
//!
//! Each message carries the job as the typed parts of its [`JobSpec`](planwave_config::spec::JobSpec)
//! that belong to the submitter, self-contained (plan files and templates already read and
//! rendered), so workers need nothing from the submitting machine:
//! - `work`: the goal, or the plan (its path is always the job's own `plan.json`, written
//!   from the inline `plan`; a batch's plans have no recover kind);
//! - `options`: of the job's options only `meta` (the batch's `--meta` with the job line's
//!   `metadata` over it), the one option `batch --nats` gives that shapes each job.
//!
//! Everything else is the worker's own, as it always was: the model and its URL, API keys,
//! config files, limits, the planner and its rounds come from `planwave worker`'s flags,
//! environment and planwave.toml. None of it is ever put in a message (a message with any
//! other option set is refused), so no key or local path travels on the queue.

use async_nats::jetstream::message::PublishMessage as Publish;
use std::path::PathBuf;

use planwave_batch::{BadLine, JobInput, ResolvedJob};
use planwave_config::spec::{JobOptions, Work};
use planwave_plan::PlanSpec;
use serde::{Deserialize, Serialize};

use crate::names::{batch_record_key, job_key, job_record_key, job_subject};
use crate::record::{BatchRecord, JobRecord, QueueState, create_json, get_json, put_json};
use crate::{Queue, QueueError};

/// The path a plan job's `work` names: the plan in the job's own run directory, which the
/// worker writes from the message's inline plan (it reads no other file a message names).
pub(crate) use planwave_runner::ops::PLAN_FILE;

/// A job as it travels on the queue.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobMessage {
    pub batch: String,
    pub id: String,
    pub line: usize,
    pub kind: String,
    pub dir: String,
    /// What the job runs: its goal, or its plan (as [`PLAN_FILE`]).
    pub work: Work,
    /// The submitter's options of the job: only `meta` (the worker has its own for the rest).
    #[serde(default)]
    pub options: JobOptions,
    /// A plan job's plan, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanSpec>,
    /// The batch's cap on subagents in flight across every worker ([`BatchOptions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_subagents: Option<u64>,
}

/// What a batch asks of every worker that runs its jobs; carried by each job's message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchOptions {
    /// Most subagents of the batch's jobs in flight at once across all workers
    /// (`batch --nats --max-subagents N`), held through leases in KV.
    pub max_subagents: Option<u64>,
}

/// What a submission did.
#[derive(Debug, Default)]
pub struct Submitted {
    /// Jobs put on the queue now.
    pub added: usize,
    /// Jobs the batch already had (a resubmission).
    pub existing: usize,
}

pub(crate) fn message(name: &str, job: &ResolvedJob, opts: &BatchOptions) -> JobMessage {
    // The job's spec as every batch job's: the message carries its work and options.
    let spec = planwave_runner::ops::job_spec(job, PathBuf::new());
    JobMessage {
        batch: name.to_owned(),
        id: job.id.clone(),
        line: job.line,
        kind: job.kind.to_owned(),
        dir: job.dir.clone(),
        work: spec.work,
        options: spec.options,
        plan: match &job.input {
            JobInput::Plan(p) => Some(p.spec().clone()),
            JobInput::Goal(_) => None,
        },
        max_subagents: opts.max_subagents,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Puts every job of `jobs` not already in batch `name` on the queue.
pub async fn submit(
    q: &Queue,
    name: &str,
    jobs: &[ResolvedJob],
    bad_lines: &[BadLine],
) -> crate::Result<Submitted> {
    submit_with(q, name, jobs, bad_lines, &BatchOptions::default()).await
}

/// [`submit`] with the batch's options, which every job's message carries (a job already
/// queued keeps those it was queued with).
pub async fn submit_with(
    q: &Queue,
    name: &str,
    jobs: &[ResolvedJob],
    bad_lines: &[BadLine],
    opts: &BatchOptions,
) -> crate::Result<Submitted> {
    crate::check_batch_name(name)?;
    if let Some(n) = opts.max_subagents {
        crate::message::check_max_subagents(n).map_err(QueueError::new)?;
    }
    let key = batch_record_key(name);
    let mut batch: BatchRecord = get_json(q, &key).await?.unwrap_or_else(|| BatchRecord {
        name: name.to_owned(),
        submitted_ms: now_ms(),
        ..Default::default()
    });
    if batch.cancelled {
        return Err(QueueError::new(format!(
            "batch {name} was cancelled; submit under another name"
        )));
    }
    for job in jobs {
        if !batch.jobs.contains(&job.id) {
            batch.jobs.push(job.id.clone());
        }
    }
    batch.bad_lines = bad_lines.to_vec();
    // The batch record first: a job is never on the queue without status knowing of it.
    put_json(q, &key, &batch).await?;
    let mut done = Submitted::default();
    let mut acks = Vec::new();
    for job in jobs {
        let jk = job_key(&job.id);
        let record = JobRecord::queued(&job.id, job.line, job.kind, &job.dir);
        let rk = job_record_key(name, &jk);
        if !create_json(q, &rk, &record).await? {
            // Known already; only a job whose message may never have left (a crash right
            // after its record was made) is published again, deduplicated by its id.
            let known: Option<JobRecord> = get_json(q, &rk).await?;
            if known.is_none_or(|r| r.state != QueueState::Queued || r.deliveries > 0) {
                done.existing += 1;
                continue;
            }
            done.existing += 1;
        } else {
            done.added += 1;
        }
        let body = serde_json::to_vec(&message(name, job, opts))
            .map_err(|e| QueueError::of("encoding a job", e))?;
        let sent = Sent {
            id: job.id.clone(),
            subject: job_subject(name),
            body: body.into(),
            message_id: format!("{name}.{jk}"),
        };
        let ack =
            q.js.send_publish(sent.subject.clone(), sent.message())
                .await;
        acks.push((sent, ack));
        if acks.len() >= 256 {
            confirm(q, &mut acks).await?;
        }
    }
    confirm(q, &mut acks).await?;
    Ok(done)
}

/// One job's publish, kept until the server acknowledged it so it can be sent again.
struct Sent {
    id: String,
    subject: String,
    body: bytes::Bytes,
    message_id: String,
}

impl Sent {
    fn message(&self) -> Publish {
        Publish::build()
            .payload(self.body.clone())
            .message_id(self.message_id.clone())
    }
}

type Pending = (
    Sent,
    Result<
        async_nats::jetstream::context::PublishAckFuture,
        async_nats::jetstream::context::PublishError,
    >,
);

/// Waits for the server's acknowledgement of every publish so far. A publish the server
/// refused (a new stream whose cluster has not elected its leader yet: "no stream found")
/// is sent again patiently; the message id makes that safe (deduplicated).
async fn confirm(q: &Queue, acks: &mut Vec<Pending>) -> crate::Result<()> {
    for (sent, ack) in acks.drain(..) {
        let acked = match ack {
            Ok(ack) => ack.await.map(|_| ()),
            Err(e) => Err(e),
        };
        if acked.is_ok() {
            continue;
        }
        crate::record::retrying(&format!("queueing job {}", sent.id), || async {
            q.js.send_publish(sent.subject.clone(), sent.message())
                .await?
                .await
        })
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use planwave_batch::{parse_jobs, resolve_jobs};

    use super::*;

    #[test]
    fn what_submit_sends_is_what_a_worker_accepts_and_carries_only_the_jobs_metadata() {
        let lines = concat!(
            r#"{"id": "g", "goal": "分析特斯拉", "metadata": {"region": "eu"}}"#,
            "\n",
            r#"{"id": "p", "plan": {"topic": "t", "tasks": [{"id": "t1", "description": "d"}]}}"#,
            "\n"
        );
        let meta = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        let (jobs, bad) = resolve_jobs(parse_jobs(lines), Path::new("."), None, &meta, &|_| {
            Err("no files".into())
        });
        assert!(bad.is_empty(), "{bad:?}");
        for job in &jobs {
            let opts = BatchOptions {
                max_subagents: Some(4),
            };
            let body = serde_json::to_vec(&message("q3", job, &opts)).unwrap();
            let m = crate::message::decode("planwave.jobs.q3", &body).expect("accepted");
            assert_eq!(
                (m.id.as_str(), m.dir.as_str()),
                (job.id.as_str(), job.dir.as_str())
            );
            assert_eq!(m.max_subagents, Some(4));
            let sent: BTreeMap<_, _> = m.options.run.meta.meta.iter().cloned().collect();
            assert_eq!(
                sent, job.metadata,
                "the batch's --meta with the line's over it"
            );
            let mut rest = m.options.clone();
            rest.run.meta = Default::default();
            assert_eq!(
                rest,
                JobOptions::default(),
                "nothing of the submitter's own"
            );
            match (&m.work, &job.input) {
                (Work::Goal { goal, .. }, JobInput::Goal(g)) => assert_eq!(goal, g),
                (Work::Plan { plan, recover }, JobInput::Plan(p)) => {
                    assert_eq!((plan.to_str(), *recover), (Some(PLAN_FILE), false));
                    assert_eq!(m.plan.as_ref(), Some(p.spec()));
                }
                other => panic!("work of another kind: {other:?}"),
            }
        }
    }
}
