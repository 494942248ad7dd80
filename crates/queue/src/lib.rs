//! Batches across machines on NATS JetStream: [`submit`] puts a job file's jobs on a
//! work-queue stream, [`Worker`]s on any machine pull and run them with the runner's batch
//! job ([`planwave_runner::ops::JobContext`]), and [`status`], [`fetch`] and [`cancel`]
//! read and steer a batch by name.
//!
//! What lives where (all file storage, replicated as the server is configured):
//! - stream `PLANWAVE_JOBS` (work queue, explicit ack): one message per job, message id
//!   `batch.job` so a resubmission adds nothing;
//! - KV bucket `planwave_jobs`: a record per batch and per job (state, worker, reason,
//!   verdict) — what `status` shows;
//! - stream `PLANWAVE_JOURNAL`: each job's `events.jsonl`, one message per group commit,
//!   published (and acknowledged by JetStream) before the engine counts a task completed;
//!   a worker that takes over a job replays it into the engine's resume path;
//! - object store `planwave_runs`: a finished job's run directory, which `fetch` writes back
//!   as a local batch directory;
//! - `serve --nats`'s runs ([`submit_run`], [`run_record`], [`follow_journal`], [`requeue`]):
//!   each a batch of one job named by the run's id, its message kept in the object store as
//!   `job.json` for resume; a goal run is followed through its mirrored directory's
//!   journals and rounds' plans ([`Followed`]);
//! - KV buckets `planwave_leases` and `planwave_rates`: the provider's in-flight leases, a
//!   batch's subagent leases (`--max-subagents` across the fleet) and the log of the
//!   provider's requests/tokens of the last minute, shared by every worker.
//!
//! A message is input from outside: a worker decodes and checks every field of it
//! ([`BadMessage`] lists what is wrong; the message is terminated, never run) and writes and
//! removes only inside its own [`WorkerCache`].
//!
//! It knows nothing of clap or terminals; the model's API key never enters the queue (each
//! worker reads its own from its environment).

mod cache;
mod cancel;
mod connect;
mod depth;
mod dir_follow;
mod dir_mirror;
mod error;
mod fetch;
mod fleet_slots;
mod journal;
mod leases;
mod limits;
mod message;
mod names;
mod rates;
mod record;
mod remote;
mod shared_limits;
mod status;
mod submit;
mod worker;

pub use cache::{CacheError, WorkerCache};
pub use cancel::cancel;
pub use connect::{JournalLimits, Queue, QueueOptions, redact_url};
pub use depth::QueueDepth;
pub use dir_follow::Followed;
pub use error::QueueError;
pub use fetch::{Fetched, check_fetch_dir, fetch};
pub use message::{BadMessage, MAX_SUBAGENTS};
pub use names::check_batch_name;
pub use rates::OnWait;
pub use record::{BatchRecord, JobRecord, QueueState};
pub use remote::{
    RemoteRun, Requeued, follow_journal, journal_last_seq, put_serve_record, requeue, run_files,
    run_names, run_plan, run_record, serve_record, serve_records, submit_run, watch_run,
};
pub use shared_limits::share_provider_limits;
pub use status::{BatchStatus, status};
pub use submit::{BatchOptions, Submitted, submit, submit_with};
pub use worker::{DEFAULT_ACK_WAIT, STOP_GRACE, Worker, WorkerEnd};

/// Told how long a journal commit to JetStream took.
pub type OnCommit = std::sync::Arc<dyn Fn(std::time::Duration) + Send + Sync>;

/// Where a job is on this worker, for [`Worker::on_job`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobPhase<'a> {
    Started,
    /// Its state as recorded (`completed`, `failed`, ...), `handed_back` or `not_started`.
    Ended(&'a str),
}

/// Told where a job is on this worker.
pub type OnJob = std::sync::Arc<dyn Fn(JobPhase<'_>) + Send + Sync>;

pub type Result<T, E = QueueError> = std::result::Result<T, E>;
