//! A job's share of a Batch API client: [`BatchScope`]. One client serves many jobs (a
//! batch's, a server's runs, a worker's), and one provider batch may hold calls of several of
//! them; each job keeps its own part apart:
//!
//! - its calls' custom ids, named by the job's key (kept in its ledger), so the same call of
//!   the same job has the same id in any process that takes the job up;
//! - its ledger: the files and batches holding its calls, in its own run directory, so the
//!   job can be resumed (or taken over by another worker) alone;
//! - who hears of the provider batches holding its calls, with its count of calls in each;
//! - whether it is waiting on the Batch API (every task it runs has a call waiting, or its
//!   one caller has), so a batch can be submitted as soon as no job can add a call to it.
//!
//! Calls join their job's scope through [`BatchScope::wrap`]: the scoped provider marks each
//! call it forwards (a task-local), however many wrappers lie between it and the
//! [`BatchProvider`](super::BatchProvider).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::ledger::Ledger;
use super::{BatchObserver, BatchStatus};
use crate::{ChatRequest, ChatResponse, LlmError, LlmProvider};

tokio::task_local! {
    /// The job the call being made belongs to (set by [`Scoped`]).
    pub(crate) static SCOPE: Arc<BatchScope>;
}

pub struct BatchScope {
    /// Names the job in its custom ids (`""`: a ledger from before keys, ids as they were).
    key: String,
    ledger: Mutex<Option<Ledger>>,
    observer: Option<Arc<dyn BatchObserver>>,
    /// How often each request body was asked by this job.
    occurrences: Mutex<HashMap<u64, u32>>,
    /// Tasks the job runs now (told by its executions).
    running: AtomicI64,
    /// The job's calls queued or in a provider batch.
    waiting: AtomicI64,
    live: AtomicBool,
    /// The client's count of changes to any scope, so it can tell a quiet moment.
    changes: Arc<AtomicU64>,
}

impl BatchScope {
    pub(crate) fn new(
        key: String,
        ledger: Option<Ledger>,
        observer: Option<Arc<dyn BatchObserver>>,
        changes: Arc<AtomicU64>,
    ) -> BatchScope {
        BatchScope {
            key,
            ledger: Mutex::new(ledger),
            observer,
            occurrences: Mutex::new(HashMap::new()),
            running: AtomicI64::new(0),
            waiting: AtomicI64::new(0),
            live: AtomicBool::new(true),
            changes,
        }
    }

    /// `inner` with every call it is asked made as this job's.
    pub fn wrap(self: &Arc<Self>, inner: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        Arc::new(Scoped {
            inner,
            scope: self.clone(),
        })
    }

    /// `delta` more (or fewer) of the job's tasks are running.
    pub fn add_running(&self, delta: i64) {
        self.running.fetch_add(delta, Ordering::SeqCst);
        self.changed();
    }

    /// The job ended: nothing waits for it any more.
    pub fn close(&self) {
        self.live.store(false, Ordering::SeqCst);
        self.changed();
    }

    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::SeqCst)
    }

    /// Every caller the job has now waits on the Batch API: each running task, or (none
    /// running) its one caller (a planner, the summary). A closed job waits for nothing.
    pub fn is_waiting(&self) -> bool {
        let running = self.running.load(Ordering::SeqCst).max(1);
        !self.is_live() || self.waiting.load(Ordering::SeqCst) >= running
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    /// The custom id of a body with hash `h`: the job's key, the hash, and how many times the
    /// job asked this body.
    pub(crate) fn custom_id(&self, h: u64) -> String {
        let mut seen = self.occurrences.lock().unwrap_or_else(|e| e.into_inner());
        let n = seen.entry(h).or_insert(0);
        *n += 1;
        if self.key.is_empty() {
            format!("pw-{h:016x}-{n}")
        } else {
            format!("pw-{}-{h:016x}-{n}", self.key)
        }
    }

    /// Appends to the job's ledger; `Ok(false)` when it keeps none.
    pub(crate) fn record(
        &self,
        f: impl FnOnce(&mut Ledger) -> std::io::Result<()>,
    ) -> Result<bool, String> {
        match &mut *self.ledger.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(l) => f(l)
                .map(|()| true)
                .map_err(|e| format!("writing the batch ledger: {e}")),
            None => Ok(false),
        }
    }

    pub(crate) fn tell(&self, status: &BatchStatus) {
        if let Some(o) = &self.observer {
            o.batch_state(status);
        }
    }
}

/// A key for a new job: 12 hex digits, from the clock, the process and a counter (unique
/// among the jobs whose calls can share a file; recorded, never derived again).
pub(crate) fn new_key() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{nanos}-{}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        rand::random::<u64>()
    );
    format!(
        "{:012x}",
        planwave_record::stable_hash(0, &seed, 0) & 0xffff_ffff_ffff
    )
}

/// A key read back from a ledger (input from a file): short, letters and digits only, so a
/// custom id made with it stays one plain token.
pub(crate) fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 24 && key.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A call's waiting on the Batch API, counted in its job's scope until dropped (answered,
/// failed, or given up by its caller).
pub(crate) struct Owner(pub Arc<BatchScope>);

impl Owner {
    pub(crate) fn new(scope: Arc<BatchScope>) -> Owner {
        scope.waiting.fetch_add(1, Ordering::SeqCst);
        scope.changed();
        Owner(scope)
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
        self.0.changed();
    }
}

/// A provider whose calls are made as one job's.
struct Scoped {
    inner: Arc<dyn LlmProvider>,
    scope: Arc<BatchScope>,
}

#[async_trait]
impl LlmProvider for Scoped {
    crate::pass_provider_info_to!(inner);

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        SCOPE
            .scope(self.scope.clone(), self.inner.chat(request))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(key: &str) -> Arc<BatchScope> {
        Arc::new(BatchScope::new(
            key.into(),
            None,
            None,
            Arc::new(AtomicU64::new(0)),
        ))
    }

    #[test]
    fn a_job_waits_when_each_running_task_has_a_call_waiting() {
        let s = scope("k");
        assert!(!s.is_waiting(), "live, nothing asked yet: it will ask");
        let first = Owner::new(s.clone());
        assert!(s.is_waiting(), "its one caller waits");
        s.add_running(2);
        assert!(!s.is_waiting(), "two tasks, one call");
        let second = Owner::new(s.clone());
        assert!(s.is_waiting());
        drop(first);
        assert!(
            !s.is_waiting(),
            "an answer handed back: that task works again"
        );
        s.add_running(-1);
        assert!(s.is_waiting());
        drop(second);
        s.close();
        assert!(s.is_waiting(), "a closed job waits for nothing");
    }

    #[test]
    fn custom_ids_name_the_job_and_count_each_body() {
        let s = scope("abc");
        assert_eq!(s.custom_id(0x2a), "pw-abc-000000000000002a-1");
        assert_eq!(s.custom_id(0x2a), "pw-abc-000000000000002a-2");
        assert_eq!(scope("").custom_id(1), "pw-0000000000000001-1");
        let k = new_key();
        assert!(valid_key(&k) && k.len() == 12, "{k}");
        assert_ne!(k, new_key());
        assert!(!valid_key("a-b") && !valid_key("") && !valid_key(&"a".repeat(25)));
    }
}
