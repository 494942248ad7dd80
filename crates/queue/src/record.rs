//! What the KV bucket holds: a record per batch and one per job, as JSON.

use planwave_batch::{BadLine, JobState, JobSummary};
use serde::{Deserialize, Serialize};

use crate::{Queue, QueueError};

/// Where a job of a queued batch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueState {
    Queued,
    Running,
    Completed,
    Partial,
    Failed,
    Cancelled,
    /// The goal needs clarifying: the job's questions are in its summary.
    NeedsInput,
}

impl QueueState {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueState::Queued => "queued",
            QueueState::Running => "running",
            QueueState::Completed => "completed",
            QueueState::Partial => "partial",
            QueueState::Failed => "failed",
            QueueState::Cancelled => "cancelled",
            QueueState::NeedsInput => "needs_input",
        }
    }

    pub fn is_finished(self) -> bool {
        !matches!(self, QueueState::Queued | QueueState::Running)
    }

    pub fn of(state: JobState) -> QueueState {
        match state {
            JobState::Completed => QueueState::Completed,
            JobState::Partial => QueueState::Partial,
            JobState::Failed => QueueState::Failed,
            JobState::Cancelled => QueueState::Cancelled,
            JobState::NeedsInput => QueueState::NeedsInput,
        }
    }
}

/// A batch as submitted: its jobs (in file order) and the lines that were skipped.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BatchRecord {
    pub name: String,
    /// Job ids in the order they were first submitted.
    pub jobs: Vec<String>,
    pub bad_lines: Vec<BadLine>,
    #[serde(default)]
    pub cancelled: bool,
    /// Milliseconds since the Unix epoch of the first submission.
    pub submitted_ms: u64,
}

/// One job's state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub line: usize,
    pub kind: String,
    /// The job's directory under `jobs/` in a fetched batch.
    pub dir: String,
    pub state: QueueState,
    /// The worker running it, or the last one that did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// Every worker that took it, in order (the last few): a run taken over after its
    /// worker died shows the hand-over.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<String>,
    /// Why it failed, or why it went back to the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Times it was handed to a worker.
    #[serde(default)]
    pub deliveries: u32,
    /// Deliveries that ended without a verdict because the job crashed its worker (the worker
    /// died or was killed) or could not start: what makes a job poison. Hand-backs of a
    /// stopping worker do not count.
    #[serde(default)]
    pub attempts: u32,
    /// The verdict of its run, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<JobSummary>,
    /// The stream sequence of the job's message: another message for the same job (a
    /// resubmission after the dedup window) is dropped, never run twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The run directory's files (relative paths) in the object store.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl JobRecord {
    /// A job on the queue that no worker has taken yet.
    pub(crate) fn queued(id: &str, line: usize, kind: &str, dir: &str) -> JobRecord {
        JobRecord {
            id: id.to_owned(),
            line,
            kind: kind.to_owned(),
            dir: dir.to_owned(),
            state: QueueState::Queued,
            worker: None,
            workers: Vec::new(),
            reason: None,
            deliveries: 0,
            attempts: 0,
            summary: None,
            seq: None,
            files: Vec::new(),
        }
    }
}

/// How long a bucket operation is tried again while the server is away or a cluster elects
/// a new leader (seconds, not minutes: a job must not burn its deliveries on an election).
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// `op` until it succeeds or [`PATIENCE`] has passed.
pub(crate) async fn retrying<T, E: std::fmt::Display, F: Future<Output = Result<T, E>>>(
    what: &str,
    mut op: impl FnMut() -> F,
) -> crate::Result<T> {
    let started = std::time::Instant::now();
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if started.elapsed() > PATIENCE => return Err(QueueError::of(what, e)),
            Err(e) => {
                tracing::debug!(error = %e, "{what}; trying again");
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
        }
    }
}

pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
    q: &Queue,
    key: &str,
) -> crate::Result<Option<T>> {
    let Some(bytes) = retrying("reading the job state bucket", || q.state.get(key)).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| QueueError::of(&format!("{key} in the job state bucket"), e))
}

pub(crate) async fn put_json<T: Serialize>(q: &Queue, key: &str, value: &T) -> crate::Result<()> {
    let bytes: bytes::Bytes = serde_json::to_vec(value)
        .map_err(|e| QueueError::of("encoding a record", e))?
        .into();
    retrying("writing the job state bucket", || {
        q.state.put(key, bytes.clone())
    })
    .await
    .map(|_| ())
}

/// `Ok(false)` when the key exists already.
pub(crate) async fn create_json<T: Serialize>(
    q: &Queue,
    key: &str,
    value: &T,
) -> crate::Result<bool> {
    let bytes = serde_json::to_vec(value).map_err(|e| QueueError::of("encoding a record", e))?;
    match q.state.create(key, bytes.into()).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == async_nats::jetstream::kv::CreateErrorKind::AlreadyExists => {
            Ok(false)
        }
        Err(e) => Err(QueueError::of("writing the job state bucket", e)),
    }
}

/// Changes the record at `key` with `change` only if nobody wrote it in between (a
/// compare-and-set on its revision, read again and retried on a conflict): `change` returns
/// `false` to leave the record as it is. `Ok(true)` when it was written.
pub(crate) async fn update_json<T: serde::de::DeserializeOwned + Serialize>(
    q: &Queue,
    key: &str,
    mut change: impl FnMut(&mut T) -> bool,
) -> crate::Result<bool> {
    const CONFLICTS: usize = 20;
    for _ in 0..CONFLICTS {
        let Some(entry) = retrying("reading the job state bucket", || q.state.entry(key)).await?
        else {
            return Ok(false);
        };
        let mut value: T = serde_json::from_slice(&entry.value)
            .map_err(|e| QueueError::of(&format!("{key} in the job state bucket"), e))?;
        if !change(&mut value) {
            return Ok(false);
        }
        let bytes =
            serde_json::to_vec(&value).map_err(|e| QueueError::of("encoding a record", e))?;
        if q.state
            .update(key, bytes.into(), entry.revision)
            .await
            .is_ok()
        {
            return Ok(true);
        }
    }
    Err(QueueError::new(format!(
        "{key}: written by others {CONFLICTS} times while being updated"
    )))
}
