//! A provider wrapper that timestamps every model call of a run, and what sits beside it
//! between the engine and the endpoint: the `shaping` of each request, the `abandon`ing of
//! calls once a load test is stopped, the `live` histograms a live view reads, and the
//! per-task `timeline` made of its timestamps.

pub(crate) mod abandon;
pub(crate) mod live;
pub(crate) mod shaping;
pub(crate) mod timeline;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use planwave_llm::{AgentRole, ChatCall, ChatRequest, ChatResponse, LlmProvider};
use planwave_plan::ValidatedPlan;

use crate::figures::serving::CallRecord;
use crate::workload::sessions::SessionMap;
use live::{LiveLatencies, LiveSnapshot};

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
    /// Per task: the earliest moment (from the epoch) its first call may be sent: the
    /// arrival process of an open-loop run. The engine's dispatch is not delayed, the send is.
    arrivals: Option<Vec<Duration>>,
    /// Multi-turn sessions: each later turn waits its think time before its first send
    /// (after its arrival, if any), outside the call's own figures.
    sessions: Option<Arc<SessionMap>>,
    /// Every call's client-side record, when kept (serving metrics).
    records: Option<Mutex<Vec<CallRecord>>>,
    /// Answer the report's integrator call here instead of sending it: against an endpoint
    /// the workload is the tasks' requests, and an executive summary nobody asked for
    /// (about 1,100 tokens, 22 s at 50 tokens/s) would run after them.
    local_integrator: bool,
    integrator_sent: AtomicU64,
    integrator_local: AtomicU64,
    /// TTFT and ITL of the requests so far, for a live view (lock-free; `None`: not kept).
    live: Option<LiveLatencies>,
}

/// What a probe saw, read after the run.
#[derive(Clone, Debug)]
pub(crate) struct ProbeSnapshot {
    /// Per task: first call began, ns since the epoch (None if never called).
    pub(crate) first_start_ns: Vec<Option<u64>>,
    /// Per task: last successful call returned, ns since the epoch.
    pub(crate) last_done_ns: Vec<Option<u64>>,
    pub(crate) calls: u64,
    pub(crate) errors: u64,
    pub(crate) max_in_flight: u64,
    /// Integrator calls sent to the provider (counted in `calls`).
    pub(crate) integrator_sent: u64,
    /// Integrator calls answered by the probe, not sent (not in `calls`).
    pub(crate) integrator_local: u64,
}

impl Probe {
    pub(crate) fn new(inner: Arc<dyn LlmProvider>, plan: Arc<ValidatedPlan>) -> Probe {
        let n = plan.len();
        Probe {
            inner,
            plan,
            epoch: Instant::now(),
            epoch_monotonic_ns: timeline::monotonic_now_ns(),
            first_start: (0..n).map(|_| AtomicU64::new(0)).collect(),
            last_done: (0..n).map(|_| AtomicU64::new(0)).collect(),
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            in_flight: AtomicI64::new(0),
            max_in_flight: AtomicI64::new(0),
            arrivals: None,
            sessions: None,
            records: None,
            local_integrator: false,
            integrator_sent: AtomicU64::new(0),
            integrator_local: AtomicU64::new(0),
            live: None,
        }
    }

    /// Keeps TTFT and ITL histograms of the requests as they end, for a live view.
    pub(crate) fn with_live_latencies(mut self) -> Probe {
        self.live = Some(LiveLatencies::default());
        self
    }

    /// The run so far, from the counters the probe keeps (and its histograms, when kept).
    pub fn live_snapshot(&self) -> LiveSnapshot {
        let sent = self.calls.load(Ordering::Acquire);
        let in_flight = self.in_flight.load(Ordering::Acquire).max(0) as u64;
        let s = LiveSnapshot {
            elapsed: self.epoch.elapsed(),
            sent,
            done: sent.saturating_sub(in_flight),
            errors: self.errors.load(Ordering::Acquire),
            in_flight,
            ..LiveSnapshot::default()
        };
        match &self.live {
            Some(l) => s.with_latencies(l),
            None => s,
        }
    }

    /// Holds each task's first send until its arrival time (offset from the probe's epoch).
    pub(crate) fn with_arrivals(mut self, arrivals: Vec<Duration>) -> Probe {
        self.arrivals = Some(arrivals);
        self
    }

    /// Holds each later turn of a session for its think time (see the field).
    pub(crate) fn with_sessions(mut self, sessions: Arc<SessionMap>) -> Probe {
        self.sessions = Some(sessions);
        self
    }

    /// Answers the integrator's call without sending it (see the field).
    pub(crate) fn answering_integrator_locally(mut self) -> Probe {
        self.local_integrator = true;
        self
    }

    /// Keeps a [`CallRecord`] of every call.
    pub(crate) fn recording_calls(mut self) -> Probe {
        self.records = Some(Mutex::new(Vec::new()));
        self
    }

    /// The calls recorded so far (empty unless [`Probe::recording_calls`]).
    pub(crate) fn take_records(&self) -> Vec<CallRecord> {
        self.records
            .as_ref()
            .and_then(|r| r.lock().ok().map(|mut v| std::mem::take(&mut *v)))
            .unwrap_or_default()
    }

    /// The run's epoch (time zero of every figure).
    pub(crate) fn epoch(&self) -> Instant {
        self.epoch
    }

    /// The probe's time zero on CLOCK_MONOTONIC, in ns.
    pub(crate) fn epoch_monotonic_ns(&self) -> Option<u64> {
        self.epoch_monotonic_ns
    }

    pub(crate) fn snapshot(&self) -> ProbeSnapshot {
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
            integrator_sent: self.integrator_sent.load(Ordering::Acquire),
            integrator_local: self.integrator_local.load(Ordering::Acquire),
        }
    }

    fn now_ns(&self) -> u64 {
        // +1 so that 0 can mean "never".
        self.epoch.elapsed().as_nanos() as u64 + 1
    }
}

impl Probe {
    /// Starts the inner call now and returns what waits on it: the request moves into the
    /// inner call, so this future holds only the call and the figures to record.
    fn observe(&self, index: Option<usize>, request: ChatRequest) -> ChatCall<'_> {
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
        let live = self
            .live
            .as_ref()
            .filter(|_| request.role == AgentRole::Subagent);
        let keep = self.records.as_ref().map(|_| {
            (
                request.role.as_str(),
                request.context.task_id.clone(),
                Instant::now(),
            )
        });
        let call = self.inner.chat(request);
        Box::pin(async move {
            let answer = call.await;
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            if let (Some(records), Some((role, task, sent))) = (&self.records, keep) {
                let start_ms = sent.duration_since(self.epoch).as_secs_f64() * 1000.0;
                let r = CallRecord::of(role, task, start_ms, sent.elapsed(), &answer);
                if let Ok(mut v) = records.lock() {
                    v.push(r);
                }
            }
            match &answer {
                Ok(a) => {
                    if let (Some(live), Some(t)) = (live, &a.timing) {
                        live.record(t);
                    }
                    if let Some(i) = index {
                        self.last_done[i].store(self.now_ns(), Ordering::Release);
                    }
                }
                Err(_) => {
                    self.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            answer
        })
    }
}

#[async_trait]
impl LlmProvider for Probe {
    planwave_llm::pass_provider_info_to!(inner);

    /// Written out rather than `async fn`: async_trait's future would keep the request twice
    /// (its argument and the body's copy) for the whole call, on top of the inner call's
    /// own; with 100,000 calls in flight that was most of this future's size.
    fn chat<'life0, 'async_trait>(&'life0 self, request: ChatRequest) -> ChatCall<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        if request.role == AgentRole::Integrator {
            if self.local_integrator {
                self.integrator_local.fetch_add(1, Ordering::Relaxed);
                let model = self.inner.info().model;
                return Box::pin(async move { Ok(local_summary(model)) });
            }
            self.integrator_sent.fetch_add(1, Ordering::Relaxed);
        }
        let index = request
            .context
            .task_id
            .as_deref()
            .and_then(|id| self.plan.index_of_key(id));
        let arrival = index.and_then(|i| self.arrivals.as_ref()?.get(i).copied());
        let think = match (&self.sessions, index) {
            (Some(s), Some(i)) if request.attempt == 1 => s.think_before(i),
            _ => None,
        };
        if arrival.is_none() && think.is_none() {
            return self.observe(index, request);
        }
        Box::pin(async move {
            // An open-loop run holds the first send until the task's arrival time.
            if let Some(at) = arrival {
                planwave_sim::timer::sleep_until(self.epoch + at).await;
            }
            if let Some(t) = think {
                planwave_sim::timer::sleep_until(Instant::now() + t).await;
            }
            self.observe(index, request).await
        })
    }
}

/// The executive summary of a load test that did not ask for one.
fn local_summary(model: String) -> ChatResponse {
    ChatResponse {
        content: "(No executive summary: the load test answered this call itself.)".into(),
        usage: Default::default(),
        model,
        finish_reason: Some("stop".into()),
        tool_calls: Vec::new(),
        timing: None,
    }
}

#[cfg(test)]
mod tests {
    use planwave_plan::{ValidatedPlan, generate};
    use planwave_record::ProviderInfo;
    use planwave_sim::{SimConfig, SimProvider};

    use super::*;

    /// The simulator with a model per role and retries of its own, as a real client has.
    struct PerRole(SimProvider);

    #[async_trait]
    impl LlmProvider for PerRole {
        fn info(&self) -> ProviderInfo {
            self.0.info()
        }

        fn model_for(&self, role: AgentRole) -> String {
            match role {
                AgentRole::Integrator => "big".into(),
                _ => "small".into(),
            }
        }

        fn retry_counts(&self) -> std::collections::BTreeMap<String, u64> {
            [("connection".to_owned(), 2)].into()
        }

        async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, planwave_llm::LlmError> {
            self.0.chat(request).await
        }
    }

    /// `run.json`'s transport retries and each call's model are read through the probe.
    #[test]
    fn the_probe_passes_on_the_model_per_role_and_the_client_s_retries() {
        let plan = Arc::new(ValidatedPlan::new(generate::wide(1)).expect("valid"));
        let inner: Arc<dyn LlmProvider> = Arc::new(PerRole(SimProvider::new(SimConfig::default())));
        let probe = Probe::new(inner.clone(), plan);
        for role in [AgentRole::Integrator, AgentRole::Subagent] {
            assert_eq!(probe.model_for(role), inner.model_for(role));
        }
        assert_eq!(probe.retry_counts()["connection"], 2);
        assert_eq!(probe.info(), inner.info());
    }
}
