//! One load-test run: the workload through the engine, then the figures: the makespan's
//! lower `bounds` and this process's resident memory (`rss`) among them.

mod bounds;
mod rss;

use std::sync::Arc;
use std::time::{Duration, Instant};

use planwave_engine::{EngineError, RunRequest, execute};
use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;

use crate::figures::load_report::LoadReport;
use crate::figures::percentiles::Distribution;
use crate::figures::serving::{CallRecord, ServingReport, Slo};
use crate::figures::turns::{TurnFigures, turn_figures};
use crate::probe::abandon::Abandoning;
use crate::probe::shaping::Shaping;
use crate::probe::timeline::{self, Timeline, TimelineHeader};
use crate::probe::{Probe, ProbeSnapshot};
use bounds::Bounds;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("planned latencies: expected {expected}, got {got}")]
    PlannedLength { expected: usize, got: usize },
}

/// One load-test run: the engine's request, and what the load test does around it.
pub struct LoadRequest {
    /// The run as the engine takes it. Its provider is the endpoint under test (the probe
    /// wraps it); a load test keeps no run directory, so its `output` must be `None`.
    pub run: RunRequest,
    /// Each task's planned latency in ms, when the workload knows it (the in-process
    /// simulator, a replayed latency file). Without it the bounds use the latencies observed.
    pub planned_ms: Option<Vec<f64>>,
    /// Keep every task's timestamps in [`LoadReport::timeline`].
    pub timeline: bool,
    /// Called with the probe once the run starts (for progress output).
    pub on_start: Option<Box<dyn FnOnce(Arc<Probe>) + Send>>,
    /// Per task, the earliest send of its first call after the run's start (an open-loop
    /// arrival process); `None`: as the engine dispatches.
    pub arrivals: Option<Vec<Duration>>,
    /// Measure the endpoint (serving metrics of every subagent call); `None`: do not.
    pub serving: Option<ServingOptions>,
    /// Answer the report's integrator call locally instead of sending it: against an
    /// endpoint the workload is the tasks' requests, not an executive summary after them.
    pub local_integrator: bool,
    /// What is done to each request beyond sending it (`max_tokens`, cancelling, counting
    /// tokens, sessions' think times); `None`: nothing.
    pub shaping: Option<Arc<Shaping>>,
    /// Keep TTFT and ITL histograms as requests end, for a live view of the probe
    /// ([`Probe::live_snapshot`]).
    pub live_latencies: bool,
}

/// What the serving metrics count.
#[derive(Clone, Debug, Default)]
pub struct ServingOptions {
    /// Requests that begin this long after the first are counted.
    pub warmup: Duration,
    /// The SLO goodput is counted against, with its text.
    pub slo: Option<(Slo, String)>,
}

/// Runs the workload once and measures it.
pub async fn run(req: LoadRequest) -> Result<LoadReport, LoadError> {
    let plan = req.run.plan.clone();
    check_planned(&plan, req.planned_ms.as_deref())?;
    let probe = Arc::new(probe_for(
        req.run.provider.clone(),
        plan.clone(),
        req.arrivals,
        req.serving.is_some(),
        req.local_integrator,
        req.shaping.as_ref(),
        req.live_latencies,
    ));
    if let Some(f) = req.on_start {
        f(probe.clone());
    }
    let peak_reset = rss::reset_peak_rss();
    let baseline_rss = rss::current_rss_bytes();
    let schedule = req.run.config.schedule;
    let clock = Instant::now();
    let provider = Abandoning::wrap(probe.clone(), req.run.cancel.clone());
    let result = execute(RunRequest {
        provider,
        ..req.run
    })
    .await?;
    let total_ms = clock.elapsed().as_secs_f64() * 1000.0;
    // The peak is this run's only if it could be reset before.
    let peak_rss = peak_reset.then(rss::peak_rss_bytes).flatten();
    let seen = probe.snapshot();

    let observed = observed_latencies(&plan, &seen);
    let (latencies, bound_source) = match &req.planned_ms {
        Some(p) => (p.as_slice(), "planned"),
        None => (observed.as_slice(), "observed"),
    };
    let bounds = Bounds::of(&plan, latencies);
    let dispatch = dispatch_latencies(&plan, &seen);

    let timeline = req.timeline.then(|| Timeline {
        header: TimelineHeader {
            schedule: schedule.as_str().into(),
            epoch_monotonic_ns: probe.epoch_monotonic_ns(),
        },
        tasks: timeline::timings(&plan, &seen),
    });
    let calls = probe.take_records();
    let serving = req.serving.as_ref().map(|o| serving_report(&calls, o));
    let s = &result.stats;
    let makespan_ms = s.makespan_ms;
    let ratio = |bound: f64| (bound > 0.0).then(|| makespan_ms / bound);
    let per_sec = |n: f64| {
        if total_ms > 0.0 {
            n / (total_ms / 1000.0)
        } else {
            0.0
        }
    };
    Ok(LoadReport {
        schedule: schedule.as_str().into(),
        tasks: s.tasks,
        // A load test caps answers by design (`--output-tokens`): an answer cut by the cap
        // is a request served, so its task counts as completed (and apart as truncated).
        completed: s.completed + s.truncated,
        truncated: s.truncated,
        failed: s.failed,
        blocked: s.blocked,
        makespan_ms,
        total_ms,
        bound_source: bound_source.into(),
        critical_path_bound_ms: bounds.critical_path_ms,
        critical_path_ratio: ratio(bounds.critical_path_ms),
        wave_barrier_bound_ms: bounds.wave_barrier_ms,
        wave_barrier_ratio: ratio(bounds.wave_barrier_ms),
        tasks_per_sec: per_sec((s.completed + s.truncated) as f64),
        dispatch_ms: Distribution::of(dispatch),
        peak_rss_bytes: peak_rss,
        baseline_rss_bytes: baseline_rss,
        max_in_flight: seen.max_in_flight,
        rss_per_in_flight_bytes: per_in_flight(peak_rss, baseline_rss, seen.max_in_flight),
        model_calls: seen.calls,
        model_calls_per_sec: per_sec(seen.calls as f64),
        errors: seen.errors,
        integrator_calls: seen.integrator_sent,
        integrator_answered_locally: seen.integrator_local,
        retries: s.retries,
        label: None,
        serving,
        server_metrics: None,
        server_metrics_dropped: None,
        turns: turns(req.shaping, &plan, &calls),
        calls,
        timeline,
    })
}

/// Sessions' figures per turn number.
fn turns(
    shaping: Option<Arc<Shaping>>,
    plan: &ValidatedPlan,
    calls: &[CallRecord],
) -> Option<Vec<TurnFigures>> {
    let map = shaping?.sessions.clone()?;
    Some(turn_figures(plan, calls, &map))
}

/// (peak - baseline) RSS per call in flight at the most, where all three are known.
fn per_in_flight(peak: Option<u64>, baseline: Option<u64>, max_in_flight: u64) -> Option<u64> {
    match (peak, baseline) {
        (Some(p), Some(b)) if max_in_flight > 0 => Some(p.saturating_sub(b) / max_in_flight),
        _ => None,
    }
}

fn check_planned(plan: &ValidatedPlan, planned: Option<&[f64]>) -> Result<(), LoadError> {
    match planned {
        Some(p) if p.len() != plan.len() => Err(LoadError::PlannedLength {
            expected: plan.len(),
            got: p.len(),
        }),
        _ => Ok(()),
    }
}

fn probe_for(
    provider: Arc<dyn LlmProvider>,
    plan: Arc<ValidatedPlan>,
    arrivals: Option<Vec<Duration>>,
    record: bool,
    local_integrator: bool,
    shaping: Option<&Arc<Shaping>>,
    live: bool,
) -> Probe {
    let provider = match shaping {
        Some(s) => s.wrap(provider, plan.clone()),
        None => provider,
    };
    let mut probe = Probe::new(provider, plan);
    if let Some(sessions) = shaping.and_then(|s| s.sessions.clone()) {
        probe = probe.with_sessions(sessions);
    }
    if live {
        probe = probe.with_live_latencies();
    }
    if local_integrator {
        probe = probe.answering_integrator_locally();
    }
    if let Some(a) = arrivals {
        probe = probe.with_arrivals(a);
    }
    if record {
        probe = probe.recording_calls();
    }
    probe
}

/// The serving metrics of the workload's requests (subagent calls; the report's integrator
/// call is not one of them).
fn serving_report(calls: &[CallRecord], o: &ServingOptions) -> ServingReport {
    let requests: Vec<_> = calls
        .iter()
        .filter(|c| c.role == "subagent")
        .cloned()
        .collect();
    ServingReport::of(
        &requests,
        o.warmup.as_secs_f64() * 1000.0,
        o.slo.as_ref().map(|(s, t)| (s, t.as_str())),
    )
}

/// Each task's first call start to last successful return, in ms (0 when it never ran).
fn observed_latencies(plan: &ValidatedPlan, seen: &ProbeSnapshot) -> Vec<f64> {
    (0..plan.len())
        .map(|i| match (seen.first_start_ns[i], seen.last_done_ns[i]) {
            (Some(s), Some(d)) if d >= s => (d - s) as f64 / 1e6,
            _ => 0.0,
        })
        .collect()
}

/// Last prerequisite done -> task's first model call: the engine's own delay in between
/// (report, scheduling, spawn, prompt). Tasks without prerequisites have no such moment.
fn dispatch_latencies(plan: &ValidatedPlan, seen: &ProbeSnapshot) -> Vec<f64> {
    (0..plan.len())
        .filter(|&i| !plan.deps(i).is_empty())
        .filter_map(|i| {
            let start = seen.first_start_ns[i]?;
            let ready = plan
                .deps(i)
                .iter()
                .map(|&d| seen.last_done_ns[d as usize])
                .try_fold(0u64, |m, t| t.map(|t| m.max(t)))?;
            Some(start.saturating_sub(ready) as f64 / 1e6)
        })
        .collect()
}
