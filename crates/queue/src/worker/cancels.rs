//! `batch cancel` reaching running jobs: a watch on the batch records cancels the tokens of
//! the jobs this worker runs for a cancelled batch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::names::batch_record_key;
use crate::record::{BatchRecord, get_json};
use crate::{Queue, QueueError};

type Tokens = Arc<Mutex<HashMap<String, Vec<(u64, CancellationToken)>>>>;
type Cancelled = Arc<Mutex<std::collections::HashSet<String>>>;

pub(super) struct Cancels {
    queue: Queue,
    tokens: Tokens,
    /// Batches the watch has seen cancelled (it starts with every batch's current record).
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
        let mut t = self
            .cancels
            .tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(v) = t.get_mut(&self.batch) {
            v.retain(|(id, _)| *id != self.id);
        }
    }
}

impl Cancels {
    pub async fn watch(q: &Queue) -> crate::Result<Cancels> {
        let mut updates = q
            .state
            .watch("batch.*")
            .await
            .map_err(|e| QueueError::of("watching the batches", e))?;
        let tokens: Tokens = Arc::default();
        let cancelled: Cancelled = Arc::default();
        let seen = tokens.clone();
        let marked = cancelled.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(entry)) = updates.next().await {
                let Ok(b) = serde_json::from_slice::<BatchRecord>(&entry.value) else {
                    continue;
                };
                if !b.cancelled {
                    // Queued again after a cancel (`serve --nats` resume).
                    marked
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&b.name);
                    continue;
                }
                marked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(b.name.clone());
                let t = seen.lock().unwrap_or_else(|e| e.into_inner());
                for (_, token) in t.get(&b.name).into_iter().flatten() {
                    token.cancel();
                }
            }
        });
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
        self.cancelled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(batch)
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
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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
