//! The provider's in-flight limit held across every worker: a model call first takes one of
//! `n` leases, keys `inflight.<endpoint>.<i>` of a KV bucket, with `create` (which succeeds
//! for one caller only) and gives it back with a revision-checked delete.
//!
//! Why leases on JetStream KV rather than a counter: a counter incremented by a worker that
//! then dies stays high forever; a lease of a dead worker simply expires (the bucket's
//! `max_age`), while a live holder refreshes its lease during long calls. Why KV rather than a
//! limiter service: the queue's server is already there, replicated like the rest.
//! The requests- and tokens-per-minute limits are shared by `rates.rs`.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv;
use futures::StreamExt;
use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider, ProviderInfo};
use tokio::sync::Notify;

use crate::{Queue, QueueError};

const BUCKET: &str = "planwave_leases";
/// A lease nobody refreshes for this long is free again (its holder died).
const LEASE_TTL: Duration = Duration::from_secs(15);

/// `provider` with at most `limit` calls in flight across every worker wrapped the same way
/// for the same endpoint (`scope`: the base URL).
pub async fn share_in_flight_limit(
    q: &Queue,
    provider: Arc<dyn LlmProvider>,
    scope: &str,
    limit: usize,
) -> crate::Result<Arc<dyn LlmProvider>> {
    let kv =
        crate::connect::shared_bucket(q, BUCKET, LEASE_TTL, "opening the lease bucket").await?;
    let prefix = crate::connect::endpoint_key("inflight", scope);
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
    Ok(Arc::new(SharedInFlight {
        inner: provider,
        kv,
        prefix,
        limit: limit.max(1),
        holder: uuid::Uuid::new_v4().simple().to_string(),
        freed,
        watcher,
    }))
}

struct SharedInFlight {
    inner: Arc<dyn LlmProvider>,
    kv: kv::Store,
    prefix: String,
    limit: usize,
    holder: String,
    freed: Arc<Notify>,
    watcher: tokio::task::JoinHandle<()>,
}

impl Drop for SharedInFlight {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// A lease held; given back (in the background) when dropped, also when the call is
/// cancelled.
struct Lease {
    kv: kv::Store,
    key: String,
    revision: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let (kv, key, revision) = (self.kv.clone(), self.key.clone(), self.revision);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = kv.delete_expect_revision(&key, Some(revision)).await;
            });
        }
    }
}

impl SharedInFlight {
    async fn acquire(&self) -> Lease {
        // Start at a different slot per holder, so workers do not all race for slot 0.
        let start = self.holder.bytes().map(usize::from).sum::<usize>() % self.limit;
        loop {
            let waiting = self.freed.notified();
            for i in 0..self.limit {
                let key = format!("{}.{}", self.prefix, (start + i) % self.limit);
                if let Ok(revision) = self.kv.create(&key, self.holder.clone().into()).await {
                    return Lease {
                        kv: self.kv.clone(),
                        key,
                        revision,
                    };
                }
            }
            // Woken by a release; the timeout covers leases that expire (no event) and a
            // server that is away.
            let _ = tokio::time::timeout(Duration::from_millis(500), waiting).await;
        }
    }

    /// Keeps the lease alive while a call runs.
    async fn refresh(&self, lease: &mut Lease) {
        loop {
            tokio::time::sleep(LEASE_TTL / 3).await;
            if let Ok(r) = self
                .kv
                .update(&lease.key, self.holder.clone().into(), lease.revision)
                .await
            {
                lease.revision = r;
            }
        }
    }
}

#[async_trait::async_trait]
impl LlmProvider for SharedInFlight {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }

    fn model_for(&self, role: AgentRole) -> String {
        self.inner.model_for(role)
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut lease = self.acquire().await;
        tokio::select! {
            r = self.inner.chat(request) => r,
            _ = self.refresh(&mut lease) => unreachable!("refreshing never ends"),
        }
    }

    fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.inner.retry_counts()
    }
}
