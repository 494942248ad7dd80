//! `batch cancel` reaching running jobs: a watch on the batch records cancels the tokens of
//! the jobs this worker runs for a cancelled batch. The watch lasts as long as the worker:
//! when it fails or ends (missed heartbeats after the server restarted, a lost connection),
//! it is opened again with backoff, and the batches of the jobs running here are read again,
//! so a cancel made while it was down still reaches them.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv::{Watch, WatchError};
use dashmap::{DashMap, DashSet};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::names::batch_record_key;
use crate::record::{BatchRecord, get_json};
use crate::{Queue, QueueError};

/// The tokens of the jobs running here, by batch: registered and dropped by the jobs, read by
/// the watch, each batch on its own key.
type Tokens = Arc<DashMap<String, Vec<(u64, CancellationToken)>>>;
type Cancelled = Arc<DashSet<String>>;

pub(super) struct Cancels {
    queue: Queue,
    tokens: Tokens,
    /// Batches the watch has seen cancelled since it started (with the records of the
    /// batches running here read again whenever it was opened again).
    cancelled: Cancelled,
    next: std::sync::atomic::AtomicU64,
    task: tokio::task::JoinHandle<()>,
}

/// Unregisters a job's token when its run ends.
pub(super) struct Registered<'a> {
    cancels: &'a Cancels,
    batch: String,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Some(mut v) = self.cancels.tokens.get_mut(&self.batch) {
            v.retain(|(id, _)| *id != self.id);
        }
    }
}

/// The first pause before the watch is opened again after it failed, doubled per failure up
/// to [`WATCH_BACKOFF_MAX`].
const WATCH_BACKOFF: Duration = Duration::from_millis(250);
const WATCH_BACKOFF_MAX: Duration = Duration::from_secs(5);

impl Cancels {
    pub async fn watch(q: &Queue) -> crate::Result<Cancels> {
        let updates = open(q)
            .await
            .map_err(|e| QueueError::of("watching the batches", e))?;
        let tokens: Tokens = Arc::default();
        let cancelled: Cancelled = Arc::default();
        let task = tokio::spawn(follow(
            q.clone(),
            updates,
            tokens.clone(),
            cancelled.clone(),
        ));
        Ok(Cancels {
            queue: q.clone(),
            tokens,
            cancelled,
            next: Default::default(),
            task,
        })
    }

    /// Whether the watch has seen the batch cancelled (no request).
    pub fn seen_cancelled(&self, batch: &str) -> bool {
        self.cancelled.contains(batch)
    }

    /// Whether the batch is cancelled, as the bucket says now.
    pub async fn is_cancelled(&self, batch: &str) -> bool {
        get_json::<BatchRecord>(&self.queue, &batch_record_key(batch))
            .await
            .ok()
            .flatten()
            .is_some_and(|b| b.cancelled)
    }

    pub fn register(&self, batch: &str, token: CancellationToken) -> Registered<'_> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.tokens
            .entry(batch.to_owned())
            .or_default()
            .push((id, token));
        Registered {
            cancels: self,
            batch: batch.to_owned(),
            id,
        }
    }

    pub fn stop(&self) {
        self.task.abort();
    }
}

async fn open(q: &Queue) -> Result<Watch, WatchError> {
    q.state.watch("batch.*").await
}

/// Applies every batch record the watch brings, opening the watch again whenever it fails or
/// ends, until the worker stops (the task is aborted).
async fn follow(q: Queue, mut updates: Watch, tokens: Tokens, cancelled: Cancelled) {
    loop {
        while let Some(entry) = updates.next().await {
            match entry {
                Ok(entry) => {
                    if let Ok(b) = serde_json::from_slice::<BatchRecord>(&entry.value) {
                        apply(&b, &tokens, &cancelled);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the watch on batch cancels failed; opening it again");
                    break;
                }
            }
        }
        let mut pause = WATCH_BACKOFF;
        updates = loop {
            // Not a synchronisation: a pause before asking a server that is away again.
            tokio::time::sleep(pause).await;
            match open(&q).await {
                Ok(w) => break w,
                Err(e) => {
                    tracing::debug!(error = %e, "opening the watch on batch cancels");
                    pause = (pause * 2).min(WATCH_BACKOFF_MAX);
                }
            }
        };
        // What changed while the watch was down: the records of the batches running here.
        // Collected first: no entry is held across the reads below.
        let running: Vec<String> = tokens
            .iter()
            .filter(|e| !e.value().is_empty())
            .map(|e| e.key().clone())
            .collect();
        for batch in running {
            if let Ok(Some(b)) = get_json::<BatchRecord>(&q, &batch_record_key(&batch)).await {
                apply(&b, &tokens, &cancelled);
            }
        }
    }
}

/// A batch record as the watch sees it: a cancelled batch's running jobs are cancelled, one
/// queued again after a cancel (`serve --nats` resume) is no longer marked.
fn apply(b: &BatchRecord, tokens: &Tokens, cancelled: &Cancelled) {
    if !b.cancelled {
        cancelled.remove(&b.name);
        return;
    }
    // Marked before any token is cancelled, so a job this cancel ends reads the mark in its
    // verdict.
    cancelled.insert(b.name.clone());
    let running: Vec<CancellationToken> = tokens
        .get(&b.name)
        .map(|t| t.iter().map(|(_, token)| token.clone()).collect())
        .unwrap_or_default();
    for token in running {
        token.cancel();
    }
}
