//! `planwave worker --nats URL`: pulls jobs of queued batches and runs them with the same
//! engine, model client, limiter, MCP servers and settings as a local batch (one client for
//! all its jobs). Its API key comes from its own environment, never from the queue.
//! SIGTERM or Ctrl-C: running jobs are cancelled cleanly and handed back; exit 0.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use planwave_queue::{CacheError, Worker, WorkerCache};
use planwave_runner::ops::{CtrlC, Stderr};

use super::batch::progress::{BatchProgress, BatchView};
use super::exit::{InvalidInput, OK, Outcome};
use super::job::{JobOptions, Prepare};
use super::llm::{self, ResearchOptions};
use super::nats::NatsOptions;
use super::progress::Mode;
use super::worker_metrics;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub nats: NatsOptions,
    /// Jobs run at once.
    #[arg(long = "jobs", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub parallel: u64,
    /// Most subagents in flight across this worker's jobs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_subagents: Option<u64>,
    /// A job whose worker sends no sign of life for this long goes to another worker
    /// (a live worker signals three times per period, at least every 5 s). A setting of the
    /// consumer every worker shares: without this flag a worker keeps the one it finds (30s
    /// when it is the first); with it, it changes it for every worker (and says so).
    #[arg(long, value_name = "DURATION", value_parser = humantime_secs)]
    pub ack_wait: Option<Duration>,
    /// Deliveries of a job (its worker died, or it could not start) before it ends failed.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_deliver: u32,
    /// This worker's name in `batch status` (default: host name and process id).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Local cache of run directories: new, empty, or an earlier worker's (refused otherwise);
    /// the worker removes what it wrote there, and the directory only if it made it
    /// (default: a new directory under the system's temp dir, removed on exit).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// For each goal job: its rounds, planner and plan cache, as `research` has them.
    #[command(flatten)]
    pub research: ResearchOptions,
    #[command(flatten)]
    pub job: JobOptions,
    /// No per-job progress lines.
    #[arg(short, long)]
    pub quiet: bool,
    /// Serve `/metrics` (Prometheus), `/healthz` and `/readyz` here: `HOST:PORT`, or a port
    /// alone for 127.0.0.1 (`:0` picks a free port; the address is printed on stderr).
    #[arg(long, value_name = "ADDR", value_parser = super::worker_metrics::parse_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// The metrics endpoint's guards, as `serve`'s.
    #[command(flatten)]
    pub metrics_conn: super::serve_limits::ConnArgs,
}

/// A duration as every flag takes it (`planwave_config::parse_duration`), within the range
/// a consumer's ack-wait can usefully have.
fn humantime_secs(s: &str) -> Result<Duration, String> {
    let d = planwave_config::parse_duration(s)?;
    if !(Duration::from_millis(100)..=Duration::from_secs(86_400)).contains(&d) {
        return Err(format!("{s:?}: between 100ms and 24h"));
    }
    Ok(d)
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".into());
    format!("{host}-{}", std::process::id())
}

/// `--cache DIR`, or a new directory under the system's temp dir: refused (exit 2) when it
/// holds anything but an earlier worker's files, or another running worker uses it.
fn claim_cache(dir: Option<&Path>) -> anyhow::Result<WorkerCache> {
    let claimed = match dir {
        Some(dir) => WorkerCache::claim(dir),
        None => WorkerCache::temporary(),
    };
    claimed.map_err(|e| match e {
        CacheError::Refused { path, problem } => {
            InvalidInput::one(format!("--cache {}", path.display()), problem).into()
        }
        io => anyhow::Error::new(io).context("the worker's cache directory"),
    })
}

pub async fn worker(args: WorkerArgs) -> anyhow::Result<Outcome> {
    let mut settings = llm::settings(&[&args.job, &args.research])?;
    // Claimed before anything else: a directory that is not the worker's to use is bad input.
    let cache = claim_cache(args.cache.as_deref())?;
    let name = args.name.clone().unwrap_or_else(default_name);
    let queue = args
        .nats
        .connect(&format!("planwave worker {name}"))
        .await?;
    // One provider for every job: one HTTP client, one rate limiter, one retry budget; its
    // limits hold across every worker calling the same endpoint (each attempt is admitted by
    // the shared limits before it goes).
    let quiet = args.quiet;
    planwave_queue::share_provider_limits(
        &queue,
        &mut settings.llm,
        Arc::new(move |line: &str| {
            if !quiet {
                eprintln!("{line}");
            }
        }),
    )
    .await?;
    let mut resources = args.job.resources(&settings)?;
    let metrics = planwave_serve::metrics::Metrics::new();
    resources.provider =
        planwave_serve::metrics::MeteredProvider::wrap(resources.provider, metrics.clone());
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), args.quiet, &Stderr)
        .await;
    let mode = if args.quiet { Mode::Quiet } else { Mode::Lines };
    let progress = Arc::new(BatchProgress::new(0, mode));
    if let Some(addr) = args.metrics_addr {
        let probes = worker_metrics::Probes {
            queue: &queue,
            cache: cache.path(),
            mcp: resources.mcp.clone(),
        };
        let limits = args
            .metrics_conn
            .apply(planwave_serve::ServeLimits::default());
        let bound =
            worker_metrics::serve(addr, &limits, &metrics, probes, interrupt.token()).await?;
        eprintln!("worker {name}: metrics on http://{bound}/metrics");
    }
    let view = BatchView(progress.clone());
    let watch = planwave_serve::metrics::MeteredBatch {
        inner: &view,
        metrics: metrics.clone(),
        prices: Some(Arc::new(settings.run.prices.clone())),
    };
    eprintln!(
        "worker {name}: waiting for jobs (up to {} at once)",
        args.parallel
    );
    let end = resources
        .scope(async |resources| {
            Worker {
                queue: queue.clone(),
                name: name.clone(),
                jobs: args.parallel as usize,
                max_subagents: args.max_subagents.map(|n| n as usize),
                ack_wait: args.ack_wait,
                max_deliver: args.max_deliver,
                cache: &cache,
                settings: &settings,
                resources: resources.clone(),
                stop: interrupt.token(),
                watch: &watch,
                notes: &Stderr,
                on_commit: Some(worker_metrics::on_commit(&metrics)),
                on_job: Some(worker_metrics::on_job(&metrics)),
            }
            .run()
            .await
            .map_err(anyhow::Error::from)
        })
        .await?;
    // Removes what this worker wrote in its cache, and the cache only if it made it.
    drop(cache);
    let left = match end.left {
        0 => String::new(),
        n => format!(", {n} left to come back after the ack-wait"),
    };
    eprintln!(
        "worker {name}: stopped ({} job(s) finished, {} handed back{left})",
        end.finished, end.handed_back
    );
    // A stop (SIGTERM, Ctrl-C) is this command's normal end: its jobs are safe in the queue.
    Ok(Outcome(OK))
}
