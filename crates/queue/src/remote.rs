//! What `planwave serve --nats` reads and steers. A run the server submits is a batch of one
//! job, the batch, the job and the run all named by the run's id, so everything about it is
//! found from the id alone by any server on the cluster: its record in KV, its journal on
//! its own subject of `PLANWAVE_JOURNAL`, its message (kept for resume) and its finished run
//! directory in the object store. Nothing here is kept in memory: a restarted server, or a
//! second one, reads the same.
//!
//! Everything read back is input from outside (anyone allowed to publish can write a
//! subject or a key): records that do not decode are skipped, a stored message is checked as
//! a worker checks it, objects are read up to a size.

use std::collections::{BTreeMap, BTreeSet};

use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::kv::Operation;
use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::jetstream::object_store::GetErrorKind;
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use base64::Engine;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use planwave_batch::ResolvedJob;
use planwave_plan::PlanSpec;
use tokio::io::AsyncReadExt;

use crate::dir_follow::{DirFollow, Followed};
use crate::names::{
    batch_record_key, job_key, job_record_key, job_subject, journal_subject, object_name,
};
use crate::record::{BatchRecord, JobRecord, QueueState, retrying, update_json};
use crate::worker::RUN_ARCHIVE;
use crate::{Queue, QueueError};

/// The run's job message as submitted, kept so `resume` can queue it again.
const JOB_OBJECT: &str = "job.json";
/// Largest stored job message read back (a plan of `--max-tasks` tasks fits easily).
const MAX_JOB_BYTES: usize = 64 << 20;

/// A run's record and its revision in the bucket (changes with every write of it).
#[derive(Clone, Debug)]
pub struct RemoteRun {
    pub record: JobRecord,
    pub revision: u64,
}

fn run_key(run: &str) -> String {
    job_record_key(run, &job_key(run))
}

fn run_subject(run: &str) -> String {
    journal_subject(run, &job_key(run))
}

/// Submits `job` as run `job.id` (a batch of its own, of the same name): its message kept
/// in the object store, then queued as `batch --nats` queues a job.
pub async fn submit_run(q: &Queue, job: &ResolvedJob) -> crate::Result<()> {
    crate::check_batch_name(&job.id)?;
    let body = serde_json::to_vec(&crate::submit::message(
        &job.id,
        job,
        &crate::submit::BatchOptions::default(),
    ))
    .map_err(|e| QueueError::of("encoding a job", e))?;
    let name = object_name(&job.id, &job_key(&job.id), JOB_OBJECT);
    retrying("storing the job", || {
        let mut reader = body.as_slice();
        let name = name.clone();
        async move { q.runs.put(name.as_str(), &mut reader).await }
    })
    .await?;
    crate::submit(q, &job.id, std::slice::from_ref(job), &[]).await?;
    Ok(())
}

fn decode_record(run: &str, value: &[u8]) -> Option<JobRecord> {
    match serde_json::from_slice::<JobRecord>(value) {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(run, error = %e, "an unreadable job record; ignored");
            None
        }
    }
}

/// The record of run `run`, or `None` when there is none (or it does not decode).
pub async fn run_record(q: &Queue, run: &str) -> crate::Result<Option<RemoteRun>> {
    if crate::check_batch_name(run).is_err() {
        return Ok(None);
    }
    let key = run_key(run);
    let entry = retrying("reading the job state bucket", || {
        q.state.entry(key.clone())
    })
    .await?;
    Ok(entry
        .filter(|e| e.operation == Operation::Put)
        .and_then(|e| {
            decode_record(run, &e.value).map(|record| RemoteRun {
                record,
                revision: e.revision,
            })
        }))
}

/// The names of every run: batches whose one job has the batch's own name (what the server
/// submits), newest first (run ids start with their creation time).
pub async fn run_names(q: &Queue) -> crate::Result<Vec<String>> {
    let mut keys = retrying("listing the job state bucket", || q.state.keys()).await?;
    let (mut batches, mut jobs) = (BTreeSet::new(), BTreeSet::new());
    while let Some(k) = keys.next().await {
        let k = k.map_err(|e| QueueError::of("listing the job state bucket", e))?;
        if let Some(b) = k.strip_prefix("batch.") {
            batches.insert(b.to_owned());
        } else if k.starts_with("job.") {
            jobs.insert(k);
        }
    }
    let mut names: Vec<String> = batches
        .into_iter()
        .filter(|b| crate::check_batch_name(b).is_ok() && jobs.contains(&run_key(b)))
        .collect();
    names.reverse();
    Ok(names)
}

/// The run's record as it is now and at every change after.
pub async fn watch_run(
    q: &Queue,
    run: &str,
) -> crate::Result<impl Stream<Item = RemoteRun> + Send + 'static + use<>> {
    let watch = q
        .state
        .watch_with_history(run_key(run))
        .await
        .map_err(|e| QueueError::of("watching a job record", e))?;
    let run = run.to_owned();
    Ok(watch.filter_map(move |e| {
        let run = run.clone();
        async move {
            let e = e.ok().filter(|e| e.operation == Operation::Put)?;
            let record = decode_record(&run, &e.value)?;
            Some(RemoteRun {
                record,
                revision: e.revision,
            })
        }
    }))
}

/// The subject holding run `run`'s events: a plan run's journal, or a goal run's mirrored
/// directory (its rounds' journals among its files).
fn events_subject(run: &str, goal: bool) -> String {
    if goal {
        crate::dir_mirror::dir_subject(&run_subject(run))
    } else {
        run_subject(run)
    }
}

/// Every message of the run's events subject from the first, then each as it is committed:
/// its stream sequence and what it shows. A plan run's messages are lines of its
/// `events.jsonl`; a goal run's (`goal`) are pieces of its directory, read by `DirFollow`
/// into its journals' lines and its rounds' plans (`None` for the other pieces).
pub async fn follow_journal(
    q: &Queue,
    run: &str,
    goal: bool,
) -> crate::Result<impl Stream<Item = (u64, Option<Followed>)> + Send + 'static + use<>> {
    let consumer = q
        .journal
        .create_consumer(pull::OrderedConfig {
            filter_subject: events_subject(run, goal),
            deliver_policy: DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|e| QueueError::of("following a journal", e))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|e| QueueError::of("following a journal", e))?;
    let mut dir = goal.then(DirFollow::default);
    Ok(messages
        .filter_map(|m| async move {
            match m {
                Ok(m) => {
                    let seq = m.info().ok()?.stream_sequence;
                    Some((seq, m.payload.clone()))
                }
                Err(e) => {
                    tracing::debug!(error = %e, "following a journal");
                    None
                }
            }
        })
        .map(move |(seq, payload)| {
            let shown = match &mut dir {
                None => Some(Followed::Lines(payload)),
                Some(d) => d.piece(&payload),
            };
            (seq, shown)
        }))
}

/// The stream sequence of the last message of the run's events subject (0: none yet).
pub async fn journal_last_seq(q: &Queue, run: &str, goal: bool) -> crate::Result<u64> {
    match q
        .journal
        .get_last_raw_message_by_subject(&events_subject(run, goal))
        .await
    {
        Ok(m) => Ok(m.sequence),
        Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(0),
        Err(e) => Err(QueueError::of("reading a journal", e)),
    }
}

/// The object `name`, at most `max` bytes (`None` when it does not exist).
async fn read_object(q: &Queue, name: &str, max: usize) -> crate::Result<Option<Vec<u8>>> {
    let obj = match q.runs.get(name).await {
        Ok(o) => o,
        Err(e) if e.kind() == GetErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(QueueError::of(&format!("reading {name}"), e)),
    };
    if obj.info().size > max {
        return Err(QueueError::new(format!(
            "{name}: {} bytes, more than the {max} read back",
            obj.info().size
        )));
    }
    let mut bytes = Vec::with_capacity(obj.info().size);
    obj.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| QueueError::of(&format!("reading {name}"), e))?;
    if bytes.len() > max {
        return Err(QueueError::new(format!("{name}: more than {max} bytes")));
    }
    Ok(Some(bytes))
}

/// The run's stored job message, checked as a worker checks one.
async fn stored_job(q: &Queue, run: &str) -> crate::Result<Option<crate::submit::JobMessage>> {
    let name = object_name(run, &job_key(run), JOB_OBJECT);
    let Some(body) = read_object(q, &name, MAX_JOB_BYTES).await? else {
        return Ok(None);
    };
    crate::message::decode(&job_subject(run), &body)
        .map(Some)
        .map_err(|e| QueueError::new(format!("run {run}: its stored job: {e}")))
}

/// The plan a plan run was submitted with.
pub async fn run_plan(q: &Queue, run: &str) -> crate::Result<Option<PlanSpec>> {
    Ok(stored_job(q, run).await?.and_then(|m| m.plan))
}

/// The finished run's directory as its worker stored it: relative path to content, at most
/// `max` bytes stored (`None` when nothing is stored).
pub async fn run_files(
    q: &Queue,
    run: &str,
    max: usize,
) -> crate::Result<Option<BTreeMap<String, Vec<u8>>>> {
    let name = object_name(run, &job_key(run), RUN_ARCHIVE);
    let Some(bytes) = read_object(q, &name, max).await? else {
        return Ok(None);
    };
    let archive: BTreeMap<String, String> = serde_json::from_slice(&bytes)
        .map_err(|e| QueueError::of(&format!("run {run}: its stored directory"), e))?;
    let mut files = BTreeMap::new();
    for (rel, content) in archive {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(content)
            .map_err(|e| QueueError::of(&format!("run {run}: {rel}"), e))?;
        files.insert(rel, bytes);
    }
    Ok(Some(files))
}

/// What [`requeue`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Requeued {
    /// Queued again: a worker takes it over with its journal.
    Queued,
    /// Not ended: nothing to resume (its state).
    NotEnded(QueueState),
    /// It completed: nothing to resume.
    Completed,
    /// No such run, or it has no stored job (submitted by an older version).
    Missing,
}

/// Queues an ended run again (cancelled, failed, partial): its batch no longer cancelled, its
/// record `queued`, its stored message published again under a new message id. The worker
/// that takes it rebuilds its run directory from the journal, so completed tasks are kept.
pub async fn requeue(q: &Queue, run: &str) -> crate::Result<Requeued> {
    let Some(now) = run_record(q, run).await? else {
        return Ok(Requeued::Missing);
    };
    match now.record.state {
        QueueState::Completed => return Ok(Requeued::Completed),
        s if !s.is_finished() => return Ok(Requeued::NotEnded(s)),
        _ => {}
    }
    let Some(job) = stored_job(q, run).await? else {
        return Ok(Requeued::Missing);
    };
    let body: Bytes = serde_json::to_vec(&job)
        .map_err(|e| QueueError::of("encoding a job", e))?
        .into();
    // The batch first: a worker given the job must not find it cancelled.
    update_json(q, &batch_record_key(run), |b: &mut BatchRecord| {
        std::mem::replace(&mut b.cancelled, false)
    })
    .await?;
    let mut refused = None;
    update_json(q, &run_key(run), |r: &mut JobRecord| {
        if !r.state.is_finished() || r.state == QueueState::Completed {
            refused = Some(r.state);
            return false;
        }
        r.state = QueueState::Queued;
        r.reason = Some("resumed".into());
        r.summary = None;
        // The next message is a new one: the worker takes it rather than dropping it as a
        // second message for the job.
        r.seq = None;
        true
    })
    .await?;
    match refused {
        Some(QueueState::Completed) => return Ok(Requeued::Completed),
        Some(s) => return Ok(Requeued::NotEnded(s)),
        None => {}
    }
    let id = format!("{run}.{}.{}", job_key(run), uuid::Uuid::new_v4().simple());
    retrying("queueing the job again", || async {
        q.js.send_publish(
            job_subject(run),
            Publish::build().payload(body.clone()).message_id(&id),
        )
        .await?
        .await
    })
    .await?;
    Ok(Requeued::Queued)
}

/// A record of the server's own (`serve.<name>`: a batch of runs it made), any JSON.
pub async fn put_serve_record(q: &Queue, name: &str, value: &[u8]) -> crate::Result<()> {
    let bytes = Bytes::copy_from_slice(value);
    let key = format!("serve.{name}");
    retrying("writing the job state bucket", || {
        q.state.put(key.as_str(), bytes.clone())
    })
    .await
    .map(|_| ())
}

/// The server's records whose names start with `prefix`, with their names.
pub async fn serve_records(q: &Queue, prefix: &str) -> crate::Result<Vec<(String, Bytes)>> {
    let mut keys = retrying("listing the job state bucket", || q.state.keys()).await?;
    let want = format!("serve.{prefix}");
    let mut names = Vec::new();
    while let Some(k) = keys.next().await {
        let k = k.map_err(|e| QueueError::of("listing the job state bucket", e))?;
        if k.starts_with(&want) {
            names.push(k);
        }
    }
    let mut out = Vec::new();
    for k in names {
        if let Some(v) =
            retrying("reading the job state bucket", || q.state.get(k.as_str())).await?
        {
            out.push((k["serve.".len()..].to_owned(), v));
        }
    }
    Ok(out)
}

/// One server record (`None` when absent).
pub async fn serve_record(q: &Queue, name: &str) -> crate::Result<Option<Bytes>> {
    let key = format!("serve.{name}");
    retrying("reading the job state bucket", || q.state.get(key.as_str())).await
}
