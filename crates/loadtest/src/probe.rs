//! A provider wrapper that timestamps every model call of a run.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use planwave_llm::{ChatRequest, ChatResponse, LlmError, LlmProvider, ProviderInfo};
use planwave_plan::ValidatedPlan;

/// Wraps the provider of a load test. Per task it keeps when its first call began and when
/// its last successful call returned (nanoseconds since the probe was made, 0 = never), so
/// dispatch latency and observed latencies come from the calls the engine really made.
pub struct Probe {
    inner: Arc<dyn LlmProvider>,
    plan: Arc<ValidatedPlan>,
    epoch: Instant,
    /// The same moment on CLOCK_MONOTONIC (for lining up with `perf`), where known.
    epoch_monotonic_ns: Option<u64>,
    first_start: Vec<AtomicU64>,
    last_done: Vec<AtomicU64>,
    calls: AtomicU64,
    errors: AtomicU64,
    in_flight: AtomicI64,
    max_in_flight: AtomicI64,
}

/// What a probe saw, read after the run.
#[derive(Clone, Debug)]
pub struct ProbeSnapshot {
    /// Per task: first call began, ns since the epoch (None if never called).
    pub first_start_ns: Vec<Option<u64>>,
    /// Per task: last successful call returned, ns since the epoch.
    pub last_done_ns: Vec<Option<u64>>,
    pub calls: u64,
    pub errors: u64,
    pub max_in_flight: u64,
}

impl Probe {
    pub fn new(inner: Arc<dyn LlmProvider>, plan: Arc<ValidatedPlan>) -> Probe {
        let n = plan.len();
        Probe {
            inner,
            plan,
            epoch: Instant::now(),
            epoch_monotonic_ns: crate::timeline::monotonic_now_ns(),
            first_start: (0..n).map(|_| AtomicU64::new(0)).collect(),
            last_done: (0..n).map(|_| AtomicU64::new(0)).collect(),
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            in_flight: AtomicI64::new(0),
            max_in_flight: AtomicI64::new(0),
        }
    }

    /// The probe's time zero on CLOCK_MONOTONIC, in ns.
    pub fn epoch_monotonic_ns(&self) -> Option<u64> {
        self.epoch_monotonic_ns
    }

    /// Completed subagent calls so far (for progress output).
    pub fn tasks_done(&self) -> usize {
        self.last_done
            .iter()
            .filter(|t| t.load(Ordering::Relaxed) != 0)
            .count()
    }

    pub fn snapshot(&self) -> ProbeSnapshot {
        let read = |v: &[AtomicU64]| {
            v.iter()
                .map(|a| match a.load(Ordering::Acquire) {
                    0 => None,
                    t => Some(t - 1),
                })
                .collect()
        };
        ProbeSnapshot {
            first_start_ns: read(&self.first_start),
            last_done_ns: read(&self.last_done),
            calls: self.calls.load(Ordering::Acquire),
            errors: self.errors.load(Ordering::Acquire),
            max_in_flight: self.max_in_flight.load(Ordering::Acquire).max(0) as u64,
        }
    }

    fn now_ns(&self) -> u64 {
        // +1 so that 0 can mean "never".
        self.epoch.elapsed().as_nanos() as u64 + 1
    }
}

#[async_trait]
impl LlmProvider for Probe {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let index = request
            .context
            .task_id
            .as_deref()
            .and_then(|id| self.plan.index_of_key(id));
        if let Some(i) = index {
            let _ = self.first_start[i].compare_exchange(
                0,
                self.now_ns(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        self.max_in_flight.fetch_max(now, Ordering::AcqRel);
        let answer = self.inner.chat(request).await;
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        match &answer {
            Ok(_) => {
                if let Some(i) = index {
                    self.last_done[i].store(self.now_ns(), Ordering::Release);
                }
            }
            Err(_) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        answer
    }
}
