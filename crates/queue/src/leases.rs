//! At most `n` holders across every worker: `n` lease keys `<prefix>.<i>` in a KV bucket
//! whose entries expire (`max_age`). A lease is taken with `create` (which succeeds for one
//! caller only), kept alive by revision-checked updates while held, and given back with a
//! revision-checked delete when dropped, so a holder only ever removes its own lease.
//!
//! Why leases rather than a counter: a counter raised by a worker that then dies stays high
//! forever; a dead worker's lease simply expires. Why KV rather than a lock service: the
//! queue's server is already there, replicated like the rest. Used for the provider's
//! in-flight limit (`limits.rs`) and a batch's cap on subagents in flight (`fleet_slots.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use tokio::sync::Notify;

use crate::{Queue, QueueError};

const BUCKET: &str = "planwave_leases";
/// A lease nobody refreshes for this long is free again (its holder died).
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(15);
/// Keys tried per look: with a large `n` a full scan per waiter and release would be
/// thousands of round trips; a free key missed is found at a later look.
const SCAN: usize = 32;

/// The `n` leases under one prefix, as this process takes them.
pub(crate) struct Leases {
    kv: kv::Store,
    prefix: String,
    limit: usize,
    freed: Arc<Notify>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Drop for Leases {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl Leases {
    /// The leases `<prefix>.0` to `<prefix>.<limit - 1>` (`prefix`: KV key tokens).
    pub(crate) async fn open(q: &Queue, prefix: String, limit: usize) -> crate::Result<Leases> {
        let kv =
            crate::connect::shared_bucket(q, BUCKET, LEASE_TTL, "opening the lease bucket").await?;
        let freed = Arc::new(Notify::new());
        let mut updates = kv
            .watch(format!("{prefix}.*"))
            .await
            .map_err(|e| QueueError::of("watching the leases", e))?;
        let notify = freed.clone();
        let watcher = tokio::spawn(async move {
            while let Some(Ok(e)) = updates.next().await {
                if e.operation != kv::Operation::Put {
                    notify.notify_waiters();
                }
            }
        });
        Ok(Leases {
            kv,
            prefix,
            limit: limit.max(1),
            freed,
            watcher,
        })
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Waits for a free lease and takes it. Dropping the future while a `create` is under
    /// way may leave that lease taken until it expires.
    pub(crate) async fn acquire(&self) -> Lease {
        let token = uuid::Uuid::new_v4().simple().to_string();
        loop {
            let waiting = self.freed.notified();
            // A different first key per look, so holders do not all race for key 0.
            let start = rand_index(self.limit);
            for i in 0..self.limit.min(SCAN) {
                let key = format!("{}.{}", self.prefix, (start + i) % self.limit);
                if let Ok(revision) = self.kv.create(&key, token.clone().into()).await {
                    return Lease::held(self.kv.clone(), key, token, revision);
                }
            }
            // Woken by a release; the timeout covers leases that expire (no event), keys a
            // partial scan missed and a server that is away.
            let _ = tokio::time::timeout(Duration::from_millis(250), waiting).await;
        }
    }
}

fn rand_index(n: usize) -> usize {
    let b = *uuid::Uuid::new_v4().as_bytes();
    (u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) % n as u64) as usize
}

/// A lease held: refreshed in the background, given back (in the background) when dropped,
/// also when its holder's future is cancelled.
pub(crate) struct Lease {
    kv: kv::Store,
    key: String,
    /// This holding's own value, so a release that lost track of the revision still removes
    /// only its own lease.
    token: String,
    revision: Arc<AtomicU64>,
    refresher: tokio::task::JoinHandle<()>,
}

impl Lease {
    fn held(kv: kv::Store, key: String, token: String, revision: u64) -> Lease {
        let revision = Arc::new(AtomicU64::new(revision));
        let refresher = tokio::spawn(refresh(
            kv.clone(),
            key.clone(),
            token.clone(),
            revision.clone(),
        ));
        Lease {
            kv,
            key,
            token,
            revision,
            refresher,
        }
    }
}

/// Keeps the lease alive for as long as it is held.
async fn refresh(kv: kv::Store, key: String, token: String, revision: Arc<AtomicU64>) {
    loop {
        tokio::time::sleep(LEASE_TTL / 3).await;
        let at = revision.load(Ordering::SeqCst);
        if let Ok(r) = kv.update(&key, token.clone().into(), at).await {
            revision.store(r, Ordering::SeqCst);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.refresher.abort();
        let (kv, key, token) = (self.kv.clone(), self.key.clone(), self.token.clone());
        let revision = self.revision.load(Ordering::SeqCst);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(release(kv, key, token, revision));
        }
    }
}

/// Deletes the lease if it is still this holding's (a refresh aborted mid-way may have moved
/// its revision on).
async fn release(kv: kv::Store, key: String, token: String, revision: u64) {
    if kv
        .delete_expect_revision(&key, Some(revision))
        .await
        .is_ok()
    {
        return;
    }
    if let Ok(Some(e)) = kv.entry(&key).await
        && e.operation == kv::Operation::Put
        && e.value.as_ref() == token.as_bytes()
    {
        let _ = kv.delete_expect_revision(&key, Some(e.revision)).await;
    }
}
