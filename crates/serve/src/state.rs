//! What every request handler shares: the data directory, the runs this process is
//! executing, the server's own job options, and the shared resources.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;

use planwave_config::spec::HostOptions;
use planwave_config::{LlmChoice, Settings};
use planwave_runner::ops::{Resources, Watch};
use planwave_sim::SimConfig;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ids::safe_name;
use crate::listing::SummaryCache;
use crate::live::LiveRun;
use crate::metrics::{MeteredProvider, MeteredWatch};

pub struct AppState {
    pub data: PathBuf,
    /// The server's own options every job has (its config file and MCP servers, as absolute
    /// paths), recorded with the job so `planwave resume` sees the same.
    pub host: HostOptions,
    /// The model client (one HTTP client and limiter), templates and MCP registry every job
    /// shares.
    pub shared: Resources,
    pub token: Option<String>,
    /// The runs this process executes or follows, by id: read by every request that names a
    /// run, written as jobs start and end, each on its own key (no lock shared by all runs).
    pub live: DashMap<String, Arc<LiveRun>>,
    /// Cancelled on shutdown; every job's token is a child of it.
    pub shutdown: CancellationToken,
    /// Every job task, waited for on shutdown so each journal is closed.
    pub jobs: TaskTracker,
    pub summaries: SummaryCache,
    /// What one request may start or hold (`--max-running`, `--max-tasks`, ...).
    pub limits: crate::limits::Limits,
    /// `/metrics` and `/readyz` (crate::health).
    pub health: Arc<crate::health::Health>,
    /// `--nats`: jobs go to the queue and everything shown is read back from it.
    pub(crate) remote: Option<Arc<crate::remote::Remote>>,
    /// The Batch API clients of runs that ask for one (`batch_api`).
    pub(crate) batch_clients: crate::batch_api::BatchClients,
}

impl AppState {
    /// The directory of run `id`, if `id` is a safe name.
    pub fn run_dir(&self, id: &str) -> Option<PathBuf> {
        safe_name(id).map(|id| self.data.join(id))
    }

    pub fn live(&self, id: &str) -> Option<Arc<LiveRun>> {
        self.live.get(id).map(|r| r.value().clone())
    }

    pub fn insert_live(&self, run: Arc<LiveRun>) {
        self.live.insert(run.id.clone(), run);
    }

    /// A finished run is served from its files from now on (its event log is freed; readers
    /// still following it keep it until they are done). A run that ended without `run.json`
    /// (an error before it could write one) stays, so its error can be shown.
    pub fn retire(&self, run: &Arc<LiveRun>) {
        if !run.dir.join("run.json").is_file() {
            return;
        }
        // Only this run: a run started again under the same id since is not retired.
        self.live.remove_if(&run.id, |_, r| Arc::ptr_eq(r, run));
    }

    /// The resources a job runs with: the shared ones, except that a simulated model is the
    /// job's own (its latency and scripted failures are per job options); the simulator has
    /// no connection or limiter to share.
    pub fn resources_for(&self, settings: &Settings, sim: SimConfig) -> Resources {
        let mut r = self.own_resources(settings, sim);
        if let Some(batched) = self.batch_clients.resources(&r, settings) {
            r = batched;
        }
        r.provider = MeteredProvider::wrap(r.provider, self.health.metrics.clone());
        r
    }

    fn own_resources(&self, settings: &Settings, sim: SimConfig) -> Resources {
        match settings.llm {
            LlmChoice::Sim => Resources {
                provider: planwave_runner::ops::model_client(
                    settings,
                    sim,
                    &planwave_runner::ops::Silent,
                )
                .unwrap_or_else(|_| self.shared.provider.clone()),
                templates: self.shared.templates.clone(),
                mcp: self.shared.mcp.clone(),
                call_times: settings
                    .plan_cache
                    .as_ref()
                    .map(planwave_runner::ops::PlanCache::new),
                batch: None,
                batch_job: None,
                validator: self.shared.validator.clone(),
            },
            LlmChoice::OpenAi { .. } => self.shared.clone(),
        }
    }

    /// A job's view with its events also counted in the metrics, priced by its table.
    pub fn metered<'a>(&self, inner: &'a dyn Watch, settings: &Settings) -> MeteredWatch<'a> {
        MeteredWatch {
            inner,
            metrics: self.health.metrics.clone(),
            prices: Some(Arc::new(settings.run.prices.clone())),
        }
    }

    /// A job's end, counted by its final status (`error` when it failed to run).
    pub fn job_ended(&self, end: &Result<String, String>) {
        let state = end.as_deref().unwrap_or("error");
        self.health.metrics.job_finished(state);
    }

    pub fn data(&self) -> &Path {
        &self.data
    }
}
