//! `planwave loadtest`'s flags: the workload (plan or shape, data, trace), the endpoint, the
//! schedules and outputs, with the traffic (`traffic`), request (`workload`) and view groups
//! flattened in.

pub(crate) mod traffic;
pub(crate) mod workload;

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use planwave_config::spec::ScheduleArg;
use planwave_sim::SIM_MODEL;

use planwave_loadtest::{LatencyModel, SharedPrefix, TokenCount};

use crate::live_view::ViewOptions;
use traffic::TrafficOptions;
use workload::WorkloadOptions;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ShapeArg {
    /// Independent tasks, all in flight at once.
    Wide,
    /// Each task depends on the one before.
    Chain,
    /// Layers of --width tasks, each depending on up to --fan-in of the layer before.
    Layered,
    /// A random DAG; each task depends on up to --fan-in recent earlier tasks.
    Random,
}

#[derive(Debug, Args)]
pub struct LoadtestArgs {
    /// Run this plan file instead of a generated one.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["shape", "tasks", "fan_in", "width"])]
    pub(crate) plan: Option<PathBuf>,
    /// Shape of the generated plan.
    #[arg(long, value_enum, default_value = "random")]
    pub(crate) shape: ShapeArg,
    /// Tasks in the generated plan.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) tasks: u64,
    /// Most prerequisites per task (random and layered shapes).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) fan_in: usize,
    /// Tasks per layer of the layered shape (default: the square root of --tasks).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) width: Option<u64>,
    /// Seed of the generated plan and of the latency draws.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Latency of each model call of the in-process simulator: fixed:MS or
    /// lognormal:MEAN_MS:SIGMA [default: lognormal:100:1.0]
    #[arg(long, value_name = "MODEL", value_parser = traffic::parse_latency)]
    pub(crate) latency: Option<LatencyModel>,
    /// JSON map of task id to latency in ms (`{"1": 250}`) overriding --latency per task, to
    /// replay a workload; give the same file to `sim-llm serve --latency-file` with --llm-url.
    #[arg(long, value_name = "FILE")]
    pub(crate) latency_file: Option<PathBuf>,
    /// Write every task's planned latency as such a JSON map, to replay this workload elsewhere.
    #[arg(long, value_name = "FILE")]
    pub(crate) save_latencies: Option<PathBuf>,
    /// An OpenAI-compatible base URL (up to /v1, e.g. from `planwave sim-llm serve`) instead
    /// of the in-process simulator: real HTTP, latency decided by the server.
    #[arg(long, value_name = "URL")]
    pub(crate) llm_url: Option<String>,
    /// Model name sent with --llm-url.
    #[arg(long, value_name = "NAME", default_value = SIM_MODEL, requires = "llm_url")]
    pub(crate) model: String,
    /// With --llm-url: ask for one JSON body instead of an SSE stream.
    #[arg(long, requires = "llm_url")]
    pub(crate) no_stream: bool,
    /// With --llm-url: send the API key held in this environment variable. Without it no key
    /// is sent, whatever the environment or planwave.toml configure: a load test is often
    /// pointed at somebody else's gateway.
    #[arg(long, value_name = "VAR", requires = "llm_url")]
    pub(crate) api_key_env: Option<String>,
    /// With --llm-url: also send the report's integrator call (the executive summary) to the
    /// endpoint. Without it the load test answers that call itself, sends nothing after the
    /// tasks' requests, and the table's `integrator calls` row says so.
    #[arg(long, requires = "llm_url")]
    pub(crate) integrator: bool,
    /// Send the requests of this JSONL file instead of planwave's own prompts: one object a
    /// line, `{"prompt": ...}`, `{"messages": [...]}` or ShareGPT `{"conversations": [...]}`
    /// (see docs/guide/loadtest-workloads.md). Without --requests, one request per line.
    #[arg(long, value_name = "FILE", conflicts_with = "input_tokens")]
    pub(crate) dataset: Option<PathBuf>,
    /// Send synthetic prompts whose lengths in tokens are drawn from a normal distribution
    /// of this mean and spread (`512,128`; `512` for all alike), seeded by --seed.
    #[arg(long, value_name = "MEAN,SPREAD")]
    pub(crate) input_tokens: Option<TokenCount>,
    /// With --input-tokens: start the prompts with a prefix of TOKENS tokens they share (on
    /// SHARE of the requests, 0 to 1, default all), to measure a prefix cache. Without it
    /// every synthetic prompt is distinct, and each run of a sweep or --repeat draws anew.
    #[arg(
        long,
        value_name = "TOKENS[,SHARE]",
        requires = "input_tokens",
        conflicts_with = "turns"
    )]
    pub(crate) shared_prefix: Option<SharedPrefix>,
    /// Replay this trace: one request per row, sent at its TIMESTAMP with a prompt of its
    /// ContextTokens (CSV with a header, as the Azure LLM inference traces:
    /// TIMESTAMP,ContextTokens,GeneratedTokens; see docs/guide/loadtest-workloads.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dataset", "input_tokens", "plan"])]
    pub(crate) trace: Option<PathBuf>,
    /// With --trace: replay this many times faster (0.5: twice as slow), from 0.001 to 1e6.
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "trace",
          value_parser = planwave_loadtest::parse_speed)]
    pub(crate) speed: f64,
    /// Schedules to run, one after the other, side by side in the output.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "dataflow")]
    pub(crate) schedule: Vec<ScheduleArg>,
    /// Most subagents in flight (default: no cap); with --requests, a closed loop of N
    /// clients. Several (`16,64,256`): a sweep, one run per value.
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) concurrency: Vec<u64>,
    /// Task retries after a transient model error.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) retries: u32,
    /// Journal every run's events durably to FILE (JSON lines, fsynced in group commits, as
    /// `run` does), to measure what durability costs; all runs append.
    #[arg(long, value_name = "FILE")]
    pub(crate) journal: Option<PathBuf>,
    /// Write every task's timestamps (ready, call start, call end, dispatch latency) as JSON
    /// lines to FILE, one header line per run first; times are ms since the run's start, and
    /// the header gives that instant on CLOCK_MONOTONIC to line up with `perf -k CLOCK_MONOTONIC`.
    #[arg(long, value_name = "FILE")]
    pub(crate) timeline: Option<PathBuf>,
    /// Read this Prometheus endpoint of the target (e.g. http://HOST:PORT/metrics) every
    /// second during each run; the samples go into the JSON as `server_metrics`.
    #[arg(long, value_name = "URL")]
    pub(crate) scrape_metrics: Option<String>,
    /// With --scrape-metrics: keep these series (names without labels, comma-separated; a
    /// name also keeps its _sum, _count and _total) instead of vLLM's, SGLang's and TGI's
    /// serving series. At most 200 series a scrape are kept; what is left out is named.
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "scrape_metrics"
    )]
    pub(crate) scrape_series: Vec<String>,
    /// Also write one CSV row per run (the main figures) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) csv: Option<PathBuf>,
    /// Write one row per request of every run here: send time, TTFT, mean ITL, e2e, prompt,
    /// cached and output tokens, status, and the server's own timings when it gives them
    /// (llama.cpp). JSON lines; CSV when the name ends in `.csv`.
    #[arg(long, value_name = "FILE")]
    pub(crate) requests_out: Option<PathBuf>,
    /// Print the figures as JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run the whole load test N times and give every figure as the mean with a 95 %
    /// confidence interval (JSON: `repeat`; table: the main figures after the last run's).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeat: u32,
    #[command(flatten)]
    pub(crate) traffic: TrafficOptions,
    #[command(flatten)]
    pub(crate) workload: WorkloadOptions,
    #[command(flatten)]
    pub(crate) view: ViewOptions,
}
