//! `planwave serve --nats`: the server over the queue. What is POSTed is submitted to
//! JetStream (a run is a batch of one job named by the run's id, see `planwave_queue`'s
//! `remote`) and run by `planwave worker`s; the API and the page read everything back from
//! JetStream, never from this process's memory:
//! - a run's record (state, worker, deliveries) from KV, read at each request that names
//!   the run ([`sync_run`], a middleware in front of every `/runs/{id}` and
//!   `/api/runs/{id}` route);
//! - a running run's events from its journal subject, followed by one task per run
//!   ([`follow`]) into the same [`LiveRun`](crate::live::LiveRun) a local run has, so SSE,
//!   the live state and the page work unchanged (an event's SSE id is its line's position
//!   in the journal: the same on every server, after any restart);
//! - a finished run's directory from the object store, written under `--data`
//!   ([`files`]): there it is served as any run directory. `--data` is only a cache here:
//!   removing it loses nothing.
//!
//! Everything read back is untrusted: a line of a journal that is too long or not a JSON
//! object is replaced by a small `unreadable` event (so positions stay the same), records that
//! do not decode are skipped, stored files are confined to the run's directory.

mod files;
mod follow;
mod runs;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use dashmap::{DashMap, DashSet};
use planwave_queue::{Queue, QueueError, RemoteRun};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::ids::safe_name;
use crate::state::AppState;

pub use runs::{cancel, create, list, only_meta, resume, rows};

/// The queue and what this server last read of it.
pub struct Remote {
    pub queue: Queue,
    /// Each run's record as last read (a cache for the page's worker line; re-read at every
    /// request naming the run). Written by requests and followers at once, each on its own
    /// run.
    records: DashMap<String, RemoteRun>,
    /// Runs with a follower task.
    following: DashSet<String>,
    /// One materialization at a time (a finished run's files written under `--data`).
    writing: tokio::sync::Mutex<()>,
}

impl Remote {
    pub fn new(queue: Queue) -> Arc<Remote> {
        Arc::new(Remote {
            queue,
            records: DashMap::new(),
            following: DashSet::new(),
            writing: tokio::sync::Mutex::new(()),
        })
    }

    /// Keeps `run` unless a newer revision of it is already known (the entry is locked for the
    /// comparison, so two readers cannot put an older record back).
    fn remember(&self, id: &str, run: &RemoteRun) {
        self.records
            .entry(id.to_owned())
            .and_modify(|known| {
                if known.revision <= run.revision {
                    *known = run.clone();
                }
            })
            .or_insert_with(|| run.clone());
    }

    pub fn record(&self, id: &str) -> Option<RemoteRun> {
        self.records.get(id).map(|r| r.value().clone())
    }

    fn is_following(&self, id: &str) -> bool {
        self.following.contains(id)
    }
}

pub(crate) fn unavailable(e: QueueError) -> ApiError {
    ApiError::Internal(format!("the queue: {e}"))
}

/// The run a page or API path names (`/runs/{id}...`, `/api/runs/{id}...`).
fn run_id_of(path: &str) -> Option<&str> {
    let mut segs = path.trim_start_matches('/').split('/');
    let id = match (segs.next(), segs.next(), segs.next()) {
        (Some("runs"), Some(id), _) => id,
        (Some("api"), Some("runs"), Some(id)) => id,
        _ => return None,
    };
    safe_name(id)
}

/// Brings what the request will read up to date from JetStream before its handler runs.
pub async fn sync_run(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(remote) = state.remote.clone()
        && let Some(id) = run_id_of(req.uri().path())
        && let Err(e) = sync(&state, &remote, id, true).await
    {
        return e.into_response();
    }
    next.run(req).await
}

/// Reads run `id`'s record; a running (or queued) run gets a follower, a finished one its
/// files under `--data` (when `files`: the runs list does without). `None` when the queue
/// has no such run.
pub async fn sync(
    state: &Arc<AppState>,
    remote: &Arc<Remote>,
    id: &str,
    files: bool,
) -> Result<Option<RemoteRun>, ApiError> {
    let Some(run) = planwave_queue::run_record(&remote.queue, id)
        .await
        .map_err(unavailable)?
    else {
        return Ok(None);
    };
    remote.remember(id, &run);
    if remote.is_following(id) {
        return Ok(Some(run));
    }
    if run.record.state.is_finished() {
        if files {
            files::materialize(state, remote, id, &run).await?;
        }
    } else {
        follow::start(state, remote, id, run.clone()).await;
    }
    Ok(Some(run))
}

/// The queue's view of run `id` (`queue` in `GET /api/runs/{id}`): where it is, the worker
/// running it (or that ran it), every worker that took it, deliveries and crashed attempts.
pub fn queue_view(run: &RemoteRun) -> Value {
    let r = &run.record;
    json!({
        "state": r.state.as_str(),
        "worker": r.worker,
        "workers": r.workers,
        "deliveries": r.deliveries,
        "attempts": r.attempts,
        "reason": r.reason,
    })
}

/// `v` (a run's state) with the queue's view added, when the server is over the queue.
pub fn with_queue(state: &AppState, id: &str, mut v: Value) -> Value {
    if let Some(run) = state.remote.as_ref().and_then(|r| r.record(id))
        && let Some(m) = v.as_object_mut()
    {
        m.insert("queue".into(), queue_view(&run));
    }
    v
}

/// A run the queue knows but whose directory holds no `run.json` (it failed before it ran,
/// or is still queued): its state from the record alone.
pub fn state_from_record(state: &AppState, id: &str) -> Option<Value> {
    let run = state.remote.as_ref()?.record(id)?;
    let r = &run.record;
    Some(with_queue(
        state,
        id,
        json!({
            "id": id,
            "live": !r.state.is_finished(),
            "kind": if r.kind == "goal" { "research" } else { "run" },
            "status": r.state.as_str(),
            "error": r.reason,
        }),
    ))
}

/// `/readyz`: the NATS server answers a round trip.
pub struct NatsUp(pub Queue);

impl crate::health::Probe for NatsUp {
    fn name(&self) -> &str {
        "nats"
    }

    fn check(&self) -> futures::future::BoxFuture<'_, Result<(), String>> {
        Box::pin(self.0.reachable(std::time::Duration::from_secs(2)))
    }
}

#[cfg(test)]
mod tests {
    use super::run_id_of;

    #[test]
    fn the_run_a_path_names_is_found_only_when_it_is_a_plain_name() {
        assert_eq!(run_id_of("/runs/r1"), Some("r1"));
        assert_eq!(run_id_of("/runs/r1/dag.svg"), Some("r1"));
        assert_eq!(run_id_of("/api/runs/r-2/events"), Some("r-2"));
        assert_eq!(run_id_of("/api/runs/r-2"), Some("r-2"));
        for none in [
            "/api/runs",
            "/",
            "/api/batches/b1",
            "/runs/..",
            "/api/runs/%2e%2e/x",
        ] {
            assert_eq!(run_id_of(none), None, "{none}");
        }
    }
}
