//! The load test as one operation: every point of a sweep (rate or concurrency), every
//! schedule at each, through [`run`](crate::run), with the endpoint's own figures around
//! each run; then the timeline file and the journal closed. Options in, [`SweepOutcome`]
//! out; what a person sees comes back through [`SweepWatch`].

mod error;
mod workload;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use planwave_engine::{RetryPolicy, RunConfig, RunRequest};
use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use planwave_record::Schedule;
use planwave_storage::Journal;
use tokio_util::sync::CancellationToken;

pub use error::SweepError;

use crate::endpoint::scrape::{ScrapeTarget, Scraper};
use crate::endpoint::stats::{server_side, server_stats};
use crate::figures::knee::SweepSummary;
use crate::figures::load_report::LoadReport;
use crate::figures::saturation::{SaturationReport, check_point, check_sessions_point};
use crate::probe::Probe;
use crate::probe::shaping::Shaping;
use crate::run::{LoadRequest, run};
use crate::traffic::{Point, Traffic};
use crate::workload::synthetic::{SyntheticPrompts, SyntheticSpec};
use crate::workload::{LatencyModel, Shape};
use workload::{Workload, point_plan};

/// The latency of the in-process simulator when none is given.
pub const DEFAULT_LATENCY: LatencyModel = LatencyModel::LogNormal {
    mean_ms: 100.0,
    sigma: 1.0,
};

/// The plan a sweep runs (unless the traffic asks for independent requests).
#[derive(Clone, Debug)]
pub enum PlanChoice {
    Generated {
        shape: Shape,
        tasks: usize,
        fan_in: usize,
        /// Tasks per layer of the layered shape.
        width: Option<usize>,
    },
    /// A plan from elsewhere; `name` says where (a path).
    Given {
        plan: Arc<ValidatedPlan>,
        name: String,
    },
}

/// Per-task latencies replayed from a file (task id to latency).
#[derive(Clone, Debug)]
pub struct LatencyFile {
    pub path: PathBuf,
    pub latencies: HashMap<String, Duration>,
}

/// Builds the client for an endpoint; called at each point of the sweep, so every point
/// starts with a client of its own, as a separate run would.
pub type Connect<E> = Box<dyn Fn() -> Result<Arc<dyn LlmProvider>, E> + Send + Sync>;

/// Who answers the model calls.
pub enum Endpoint<E> {
    /// The in-process simulator: latencies are planned, known before the run.
    Simulator,
    /// An OpenAI-compatible server at `url`: it decides latency.
    Http { url: String, connect: Connect<E> },
}

/// A load test: which workload, who answers, which traffic and schedules.
pub struct SweepOptions<E> {
    pub plan: PlanChoice,
    /// Seed of the generated plan, the latency draws and the arrivals.
    pub seed: u64,
    /// The simulator's latency model ([`DEFAULT_LATENCY`] when `None`); refused with an
    /// HTTP endpoint.
    pub latency: Option<LatencyModel>,
    pub latency_file: Option<LatencyFile>,
    /// Write every task's planned latency here, as a latency file.
    pub save_latencies: Option<PathBuf>,
    pub endpoint: Endpoint<E>,
    /// Run one after the other at each point (repeats in a row run once).
    pub schedules: Vec<Schedule>,
    /// Task retries after a transient model error.
    pub retries: u32,
    /// Journal every run's events durably to this file (all runs append).
    pub journal: Option<PathBuf>,
    /// Write every task's timestamps as JSON lines to this file.
    pub timeline: Option<PathBuf>,
    /// Keep timelines and serving figures for pictures, whatever else asks for them.
    pub pictures: bool,
    pub traffic: Traffic,
    /// With an HTTP endpoint, send the report's integrator call too; by default the load
    /// test answers it itself and says so in the report.
    pub integrator: bool,
    /// The prompts sent for the tasks (a dataset's, synthetic ones); `None`: planwave's own.
    pub prompts: Option<Arc<dyn planwave_prompts::PromptSet>>,
    /// Each request's send time from the run's start (a replayed trace), overriding the
    /// traffic's arrivals.
    pub arrivals: Option<Vec<Duration>>,
    /// A Prometheus endpoint of the target, scraped every second during each run, and the
    /// series to keep.
    pub scrape_metrics: Option<ScrapeTarget>,
    /// What is done to each request beyond sending it (see [`Shaping`]).
    pub shaping: Option<Arc<Shaping>>,
    /// Synthetic prompts, drawn afresh for every run (in place of `prompts`), so no run
    /// inherits the server's prefix cache from the one before.
    pub synthetic: Option<SyntheticSpec>,
    /// The first salt of the sweep's runs (a `--repeat` round's number): run `k` draws its
    /// synthetic prompts with `salt * 2^16 + k`.
    pub salt: u64,
}

/// A run about to start, for the front end to show.
pub struct RunStart<'a> {
    pub tasks: usize,
    pub schedule: Schedule,
    /// The sweep point (`rate=20`), if any.
    pub label: Option<&'a str>,
    pub model: &'a str,
}

/// What the front end hears while a sweep runs.
pub trait SweepWatch: Send + Sync {
    fn run_starts(&self, _run: &RunStart<'_>) {}
    /// Called as each run starts, with the model calls it will make (one per task, plus the
    /// report's summary when the model answers it): a callback that gets the run's probe
    /// (progress output), or `None`.
    fn progress(&self, _calls: usize) -> Option<Box<dyn FnOnce(Arc<Probe>) + Send>> {
        None
    }
    /// Whether the runs' probes keep TTFT and ITL histograms for a live view (a little work
    /// per request, so only when someone reads them).
    fn live_latencies(&self) -> bool {
        false
    }
    /// Called as each run ends (before its figures are computed by the caller), so a live
    /// view can show its last line before the results.
    fn run_ends(&self) {}
}

/// The workload the results describe (the last point that ran every schedule).
#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    pub plan: Arc<ValidatedPlan>,
    /// How the plan came about (`random (seed 0, fan-in 3)`, `40 independent requests`).
    pub source: String,
    /// `in-process simulator` or the endpoint's URL.
    pub model: String,
    pub seed: u64,
    pub latency: LatencyModel,
    pub latency_file: Option<PathBuf>,
    /// An endpoint decided latency (not the simulator).
    pub latency_by_server: bool,
}

/// How a sweep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepStatus {
    /// Every task of every run completed.
    Completed,
    /// Some task did not complete.
    Partial,
    /// Cancelled.
    Interrupted,
}

/// Every run, in order, and the workload they ran.
#[derive(Debug)]
pub struct SweepOutcome {
    pub runs: Vec<LoadReport>,
    /// The workload of the last run (a stopped one included); `None` when nothing ran.
    pub workload: Option<WorkloadInfo>,
    pub interrupted: bool,
    /// The saturation check of a rate sweep (`None` for anything else).
    pub saturation: Option<SaturationReport>,
}

impl SweepOutcome {
    pub fn status(&self) -> SweepStatus {
        if self.interrupted {
            SweepStatus::Interrupted
        } else if self.runs.iter().all(|r| r.completed == r.tasks) {
            SweepStatus::Completed
        } else {
            SweepStatus::Partial
        }
    }

    /// Where the sweep saturates (`None` without a sweep); a rate sweep that ended at its
    /// saturation point says so instead of "still rising".
    pub fn summary(&self) -> Option<SweepSummary> {
        let point = self.saturation.as_ref().and_then(|s| s.point.as_deref());
        Some(SweepSummary::of(&self.runs)?.ended_at_saturation(point, &self.runs))
    }
}

/// Runs the load test: each point of the sweep, each schedule, until done or cancelled.
pub async fn run_sweep<E>(
    o: SweepOptions<E>,
    watch: &dyn SweepWatch,
    cancel: CancellationToken,
) -> Result<SweepOutcome, SweepError<E>> {
    let points = o.traffic.points()?;
    let journal = match &o.journal {
        Some(path) => Some(Arc::new(
            Journal::open(path, true).map_err(|e| SweepError::io("opening", path, e))?,
        )),
        None => None,
    };
    let endpoint = matches!(o.endpoint, Endpoint::Http { .. });
    // Sessions' per-turn figures are made of the calls' records.
    let sessions = o.shaping.as_ref().is_some_and(|s| s.sessions.is_some());
    let at = At {
        serving: o.pictures || sessions || o.traffic.wants_serving(endpoint, points.len()),
        journal,
        watch,
        cancel: &cancel,
    };
    let mut schedules = o.schedules.clone();
    schedules.dedup();
    let mut runs = Vec::new();
    let mut last = None;
    let rule = o.traffic.saturation;
    let mut saturation = (o.traffic.rate.len() > 1)
        .then(|| SaturationReport::new(&rule, o.traffic.slo.as_ref().and_then(|s| s.0.ttft_ms)));
    'points: for (k, point) in points.iter().enumerate() {
        let (plan, source) = point_plan(&o, point)?;
        let w = Workload::new(&o, plan)?;
        let arrivals = match &o.arrivals {
            Some(a) => Some(a.clone()),
            None => o.traffic.arrivals(&w.plan, point, o.seed),
        };
        let first = runs.len();
        for &schedule in &schedules {
            let prompts = run_prompts(&o, runs.len());
            let point_run = (point, schedule, prompts);
            let run = run_point(&o, &w, point_run, arrivals.clone(), &at).await?;
            runs.push(run);
            if cancel.is_cancelled() {
                // What the stopped run measured is reported, with its workload.
                last = Some((w.plan, source, w.model_label));
                break 'points;
            }
        }
        let plan = w.plan.clone();
        last = Some((w.plan, source, w.model_label));
        if let Some(s) = saturation.as_mut()
            && check_saturation(
                &o,
                s,
                &runs[first..],
                (plan.as_ref(), point),
                arrivals.as_deref(),
            )
            && rule.stop
        {
            s.skipped = points[k + 1..].iter().filter_map(Point::label).collect();
            break;
        }
    }
    if let Some(path) = &o.timeline {
        write_timeline(path, &runs)?;
    }
    if let Some(j) = &at.journal {
        j.close().map_err(SweepError::JournalClose)?;
    }
    Ok(SweepOutcome {
        runs,
        workload: last.map(|(plan, source, model)| WorkloadInfo {
            plan,
            source,
            model,
            seed: o.seed,
            latency: o.latency.unwrap_or(DEFAULT_LATENCY),
            latency_file: o.latency_file.as_ref().map(|f| f.path.clone()),
            latency_by_server: endpoint,
        }),
        interrupted: cancel.is_cancelled(),
        saturation,
    })
}

/// Checks the runs of one point of a rate sweep: in requests against their arrivals, or
/// for sessions in conversations against their starts. True when the point is the sweep's
/// first saturated one.
fn check_saturation<E>(
    o: &SweepOptions<E>,
    s: &mut SaturationReport,
    runs: &[LoadReport],
    (plan, point): (&ValidatedPlan, &Point),
    arrivals: Option<&[Duration]>,
) -> bool {
    let (rule, slo) = (&o.traffic.saturation, s.ttft_slo_ms);
    // The starts the sessions' arrivals were made of (the same seed).
    let starts = o.traffic.session_starts(point, o.seed);
    let mut first = false;
    for r in runs {
        let check = match &o.traffic.sessions {
            Some(map) => check_sessions_point(r, plan, map, starts.as_deref(), rule, slo),
            None => check_point(r, arrivals, rule, slo),
        };
        first |= s.add(check);
    }
    first
}

/// The prompts of the sweep's run number `k`: synthetic ones with the run's own salt, or
/// the ones given.
fn run_prompts<E>(o: &SweepOptions<E>, k: usize) -> Option<Arc<dyn planwave_prompts::PromptSet>> {
    match &o.synthetic {
        Some(spec) => {
            let salt = (o.salt << 16).wrapping_add(k as u64);
            let builtin = Arc::new(planwave_prompts::Templates::builtin());
            Some(Arc::new(SyntheticPrompts::salted(
                spec.clone(),
                salt,
                builtin,
            )))
        }
        None => o.prompts.clone(),
    }
}

/// What every run of the sweep shares.
struct At<'a> {
    /// Measure serving metrics.
    serving: bool,
    journal: Option<Arc<Journal>>,
    watch: &'a dyn SweepWatch,
    cancel: &'a CancellationToken,
}

/// One run: a schedule at one point of the sweep, with the endpoint's own figures when it
/// reports them.
async fn run_point<E>(
    o: &SweepOptions<E>,
    w: &Workload,
    (point, schedule, prompts): (
        &Point,
        Schedule,
        Option<Arc<dyn planwave_prompts::PromptSet>>,
    ),
    arrivals: Option<Vec<Duration>>,
    at: &At<'_>,
) -> Result<LoadReport, SweepError<E>> {
    let label = point.label();
    at.watch.run_starts(&RunStart {
        tasks: w.plan.len(),
        schedule,
        label: label.as_deref(),
        model: &w.model_label,
    });
    let url = match (&o.endpoint, at.serving) {
        (Endpoint::Http { url, .. }, true) => Some(url.as_str()),
        _ => None,
    };
    let before = match url {
        Some(url) => server_stats(url).await,
        None => None,
    };
    let scraper = o
        .scrape_metrics
        .clone()
        .map(|target| Scraper::start(target, Duration::from_secs(1)));
    // The run's time zero, to put the scraped samples on the requests' time axis.
    let epoch = Arc::new(OnceLock::<Instant>::new());
    let local_integrator = matches!(o.endpoint, Endpoint::Http { .. }) && !o.integrator;
    // The live view's total is the model calls a run makes: a call per task, and the
    // report's summary when the model (not the load test) answers it.
    let calls = w.plan.len() + usize::from(!local_integrator);
    let on_start = {
        let (epoch, progress) = (epoch.clone(), at.watch.progress(calls));
        Box::new(move |probe: Arc<Probe>| {
            let _ = epoch.set(probe.epoch());
            if let Some(f) = progress {
                f(probe);
            }
        })
    };
    let in_memory = RunRequest::in_memory(w.plan.clone(), w.provider.clone());
    let result = run(LoadRequest {
        run: RunRequest {
            // The built-in templates unless the load test was given others.
            prompts: prompts.unwrap_or_else(|| in_memory.prompts.clone()),
            journal: at.journal.clone(),
            config: RunConfig {
                schedule,
                concurrency: point.concurrency.map(|c| c as usize),
                retry: RetryPolicy {
                    max_retries: o.retries,
                    ..RetryPolicy::default()
                },
                seed: o.seed,
                // A session's turn carries the whole conversation, as a chat client sends
                // it: not fitted to a subagent's context budget.
                context_budget_tokens: if o.shaping.as_ref().is_some_and(|s| s.sessions.is_some()) {
                    None
                } else {
                    RunConfig::default().context_budget_tokens
                },
                ..RunConfig::default()
            },
            cancel: at.cancel.clone(),
            ..in_memory
        },
        planned_ms: w.planned.clone(),
        timeline: o.timeline.is_some() || o.pictures,
        on_start: Some(on_start),
        arrivals,
        serving: at.serving.then(|| o.traffic.serving_options()),
        local_integrator,
        shaping: o.shaping.clone(),
        live_latencies: at.watch.live_latencies(),
    })
    .await;
    at.watch.run_ends();
    let mut report = result.map_err(SweepError::Run)?;
    report.label = label;
    if let Some(s) = scraper {
        let (samples, dropped) = s.stop(epoch.get().copied()).await;
        report.server_metrics = Some(samples);
        report.server_metrics_dropped = dropped;
    }
    if let (Some(before), Some(url), Some(serving)) = (before, url, report.serving.as_mut())
        && let Some(after) = server_stats(url).await
    {
        serving.server = Some(server_side(&before, &after));
    }
    Ok(report)
}

fn write_timeline<E>(path: &std::path::Path, runs: &[LoadReport]) -> Result<(), SweepError<E>> {
    let file = std::fs::File::create(path).map_err(|e| SweepError::io("creating", path, e))?;
    let mut out = std::io::BufWriter::new(file);
    for t in runs.iter().filter_map(|r| r.timeline.as_ref()) {
        t.write_jsonl(&mut out)
            .map_err(|e| SweepError::io("writing", path, e))?;
    }
    std::io::Write::flush(&mut out).map_err(|e| SweepError::io("writing", path, e))
}

#[cfg(test)]
mod tests;
