//! `planwave loadtest`: runs a generated (or given) workload through the engine and prints
//! its figures as a table or JSON.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use planwave_llm::LlmProvider;
use planwave_loadtest::{
    DataPrompts, Endpoint, JsonReport, LatencyFile, LatencyModel, PlanChoice, Shape, SweepError,
    SweepOptions, SweepOutcome, SweepStatus, TokenCount, WorkloadInfo, run_sweep,
};
use planwave_prompts::PromptSet;
use planwave_record::Schedule;
use planwave_sim::{SIM_MODEL, SimConfig};

use super::exit::{INTERRUPTED, InvalidInput, OK, Outcome, PARTIAL};
use super::input::load_plan;
use super::llm::{self, LlmArg, LlmOptions, PromptOptions, Seed};
use super::loadtest_live::{Terminal, ViewOptions};
use super::loadtest_traffic::TrafficOptions;
use super::loadtest_workload::{self as workload, WorkloadOptions};
use super::options::{ScheduleArg, read_latency_file};

pub const AFTER_HELP: &str = "\
Figures (table, or --json):
  makespan            first dispatch to the last task settled
  critical-path bound sum of latencies along the longest chain; the ratio makespan/bound
                      is the engine's overhead (1.0 = none)
  wave-barrier bound  sum over waves of the slowest task: what the barrier must take
  dispatch latency    last prerequisite's model call returned -> the task's call began
  peak RSS            this run's peak resident memory; per in-flight call: (peak-baseline)/max
Latencies are planned (known before the run) with the in-process simulator or a
--latency-file; with --llm-url and no file they are the calls' observed durations.

Exit codes: 0 every task completed, 2 invalid input, 3 some task did not complete,
130 interrupted, 1 other error.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShapeArg {
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
    pub plan: Option<PathBuf>,
    /// Shape of the generated plan.
    #[arg(long, value_enum, default_value = "random")]
    pub shape: ShapeArg,
    /// Tasks in the generated plan.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub tasks: u64,
    /// Most prerequisites per task (random and layered shapes).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub fan_in: usize,
    /// Tasks per layer of the layered shape (default: the square root of --tasks).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub width: Option<u64>,
    /// Seed of the generated plan and of the latency draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Latency of each model call of the in-process simulator: fixed:MS or
    /// lognormal:MEAN_MS:SIGMA [default: lognormal:100:1.0]
    #[arg(long, value_name = "MODEL", value_parser = super::loadtest_traffic::parse_latency)]
    pub latency: Option<LatencyModel>,
    /// JSON map of task id to latency in ms (`{"1": 250}`) overriding --latency per task, to
    /// replay a workload; give the same file to `sim-llm serve --latency-file` with --llm-url.
    #[arg(long, value_name = "FILE")]
    pub latency_file: Option<PathBuf>,
    /// Write every task's planned latency as such a JSON map, to replay this workload elsewhere.
    #[arg(long, value_name = "FILE")]
    pub save_latencies: Option<PathBuf>,
    /// An OpenAI-compatible base URL (up to /v1, e.g. from `planwave sim-llm serve`) instead
    /// of the in-process simulator: real HTTP, latency decided by the server.
    #[arg(long, value_name = "URL")]
    pub llm_url: Option<String>,
    /// Model name sent with --llm-url.
    #[arg(long, value_name = "NAME", default_value = SIM_MODEL, requires = "llm_url")]
    pub model: String,
    /// With --llm-url: ask for one JSON body instead of an SSE stream.
    #[arg(long, requires = "llm_url")]
    pub no_stream: bool,
    /// With --llm-url: send the API key held in this environment variable. Without it no key
    /// is sent, whatever the environment or planwave.toml configure: a load test is often
    /// pointed at somebody else's gateway.
    #[arg(long, value_name = "VAR", requires = "llm_url")]
    pub api_key_env: Option<String>,
    /// With --llm-url: also send the report's integrator call (the executive summary) to the
    /// endpoint. Without it the load test answers that call itself, sends nothing after the
    /// tasks' requests, and the table's `integrator calls` row says so.
    #[arg(long, requires = "llm_url")]
    pub integrator: bool,
    /// Send the requests of this JSONL file instead of planwave's own prompts: one object a
    /// line, `{"prompt": ...}`, `{"messages": [...]}` or ShareGPT `{"conversations": [...]}`
    /// (see docs/guide/loadtest-workloads.md). Without --requests, one request per line.
    #[arg(long, value_name = "FILE", conflicts_with = "input_tokens")]
    pub dataset: Option<PathBuf>,
    /// Send synthetic prompts whose lengths in tokens are drawn from a normal distribution
    /// of this mean and spread (`512,128`; `512` for all alike), seeded by --seed.
    #[arg(long, value_name = "MEAN,SPREAD")]
    pub input_tokens: Option<TokenCount>,
    /// Replay this trace: one request per row, sent at its TIMESTAMP with a prompt of its
    /// ContextTokens (CSV with a header, as the Azure LLM inference traces:
    /// TIMESTAMP,ContextTokens,GeneratedTokens; see docs/guide/loadtest-workloads.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["dataset", "input_tokens", "plan"])]
    pub trace: Option<PathBuf>,
    /// With --trace: replay this many times faster (0.5: twice as slow).
    #[arg(long, value_name = "F", default_value_t = 1.0, requires = "trace")]
    pub speed: f64,
    /// Schedules to run, one after the other, side by side in the output.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "dataflow")]
    pub schedule: Vec<ScheduleArg>,
    /// Most subagents in flight (default: no cap); with --requests, a closed loop of N
    /// clients. Several (`16,64,256`): a sweep, one run per value.
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: Vec<u64>,
    /// Task retries after a transient model error.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub retries: u32,
    /// Journal every run's events durably to FILE (JSON lines, fsynced in group commits, as
    /// `run` does), to measure what durability costs; all runs append.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Write every task's timestamps (ready, call start, call end, dispatch latency) as JSON
    /// lines to FILE, one header line per run first; times are ms since the run's start, and
    /// the header gives that instant on CLOCK_MONOTONIC to line up with `perf -k CLOCK_MONOTONIC`.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Read this Prometheus endpoint of the target (e.g. http://HOST:PORT/metrics) every
    /// second during each run; the samples go into the JSON as `server_metrics`.
    #[arg(long, value_name = "URL")]
    pub scrape_metrics: Option<String>,
    /// Also write one CSV row per run (the main figures) to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print the figures as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run the whole load test N times and give every figure as the mean with a 95 %
    /// confidence interval (JSON: `repeat`; table: the main figures after the last run's).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    #[command(flatten)]
    pub traffic: TrafficOptions,
    #[command(flatten)]
    pub workload: WorkloadOptions,
    #[command(flatten)]
    pub view: ViewOptions,
}

pub async fn loadtest(a: LoadtestArgs) -> anyhow::Result<Outcome> {
    if !a.traffic.compare.is_empty() {
        return super::loadtest_compare::compare(
            &a.traffic.compare,
            a.json,
            a.traffic.html.as_ref(),
        );
    }
    // Shared with the endpoint's `connect`, which builds a client at every point.
    let a = Arc::new(a);
    if a.repeat > 1 {
        return super::loadtest_repeat::repeat(&a).await;
    }
    let options = sweep_options(&a)?;
    let interrupt = planwave_runner::CtrlC::listen();
    let outcome = run_sweep(options, &Terminal::new(&a.view), interrupt.token()).await;
    drop(interrupt);
    let outcome = outcome.map_err(sweep_error)?;
    let Some(workload) = &outcome.workload else {
        return Ok(Outcome(INTERRUPTED));
    };
    print_results(&a, &outcome, workload)?;
    Ok(Outcome(match outcome.status() {
        SweepStatus::Interrupted => INTERRUPTED,
        SweepStatus::Completed => OK,
        SweepStatus::Partial => PARTIAL,
    }))
}

/// The flags as the load test's options.
pub(super) fn sweep_options(a: &Arc<LoadtestArgs>) -> anyhow::Result<SweepOptions<anyhow::Error>> {
    workload::check(a)?;
    let tokenizer = workload::tokenizer(a)?;
    let headers = workload::headers(a)?;
    let mut plan = match &a.plan {
        Some(path) => PlanChoice::Given {
            plan: Arc::new(load_plan(path)?),
            name: path.display().to_string(),
        },
        None => PlanChoice::Generated {
            shape: match a.shape {
                ShapeArg::Wide => Shape::Wide,
                ShapeArg::Chain => Shape::Chain,
                ShapeArg::Layered => Shape::Layered,
                ShapeArg::Random => Shape::Random,
            },
            tasks: a.tasks as usize,
            fan_in: a.fan_in,
            width: a.width.map(|w| w as usize),
        },
    };
    let latency_file = match &a.latency_file {
        Some(path) => Some(LatencyFile {
            path: path.clone(),
            latencies: read_latency_file(path)?,
        }),
        None => None,
    };
    let endpoint = match &a.llm_url {
        None => Endpoint::Simulator,
        Some(url) => {
            let (url2, args, h) = (url.clone(), a.clone(), headers.clone());
            Endpoint::Http {
                url: url.clone(),
                connect: Box::new(move || http_provider(&url2, &args, &h)),
            }
        }
    };
    let mut traffic = a.traffic.traffic(&a.concurrency);
    let mut sessions = None;
    let (prompts, arrivals, trace_output) =
        match workload::sessions(a, &mut traffic, tokenizer.as_deref())? {
            Some(s) => {
                plan = s.plan;
                sessions = Some(s.map);
                (Some(s.prompts), None, None)
            }
            None => match &a.trace {
                Some(path) => trace_workload(path, a.speed, &mut traffic, tokenizer.as_deref())?,
                None => (
                    data_prompts(a, &mut traffic, tokenizer.as_deref())?,
                    None,
                    None,
                ),
            },
        };
    let shaping = workload::shaping(a, traffic.requests, trace_output, tokenizer, sessions);
    if let Some(line) = workload::describe(a, &headers) {
        eprintln!("{line}");
    }
    Ok(SweepOptions {
        plan,
        seed: a.seed,
        latency: a.latency,
        latency_file,
        save_latencies: a.save_latencies.clone(),
        endpoint,
        schedules: a
            .schedule
            .iter()
            .map(|s| match s {
                ScheduleArg::Dataflow => Schedule::Dataflow,
                ScheduleArg::Waves => Schedule::Waves,
            })
            .collect(),
        retries: a.retries,
        journal: a.journal.clone(),
        timeline: a.timeline.clone(),
        pictures: a.traffic.html.is_some(),
        traffic,
        integrator: a.integrator,
        prompts,
        arrivals,
        scrape_metrics: a.scrape_metrics.clone(),
        shaping,
    })
}

/// Each request's send time, when a trace sets it.
type Arrivals = Option<Vec<Duration>>;

/// A workload's prompts (planwave's own when `None`), send times and per-request output
/// bounds, as a trace or the data flags make them.
type Requests = (Option<Arc<dyn PromptSet>>, Arrivals, Option<Vec<u32>>);

/// A trace's prompts (one per row, of its input length, in the tokenizer's tokens when there
/// is one), send times, and output bounds (its GeneratedTokens, when every row has them);
/// the trace sets the request count.
fn trace_workload(
    path: &std::path::Path,
    speed: f64,
    traffic: &mut planwave_loadtest::Traffic,
    tokenizer: Option<&planwave_loadtest::TokenCounter>,
) -> anyhow::Result<Requests> {
    let rows = planwave_loadtest::read_trace(path)
        .map_err(|e| InvalidInput::one("--trace", e.to_string()))?;
    if traffic.requests.is_some() || !traffic.rate.is_empty() || traffic.duration.is_some() {
        return Err(InvalidInput::one(
            "--trace",
            "a trace sets the requests and their times: leave out --requests, --rate and --duration",
        )
        .into());
    }
    if !(speed.is_finite() && speed > 0.0) {
        return Err(InvalidInput::one("--speed", "expected a number above 0").into());
    }
    traffic.requests = Some(rows.len() as u64);
    let lengths: Vec<u64> = rows.iter().map(|r| r.input_tokens).collect();
    let builtin: Arc<dyn PromptSet> = Arc::new(planwave_prompts::Templates::builtin());
    let requests = match tokenizer {
        Some(t) => t.prompts_of_lengths(&lengths),
        None => planwave_loadtest::prompts_of_lengths(&lengths),
    };
    let prompts = DataPrompts::new(requests, builtin);
    let output: Option<Vec<u32>> = rows
        .iter()
        .map(|r| r.output_tokens.map(|t| t.clamp(1, u32::MAX as u64) as u32))
        .collect();
    Ok((
        Some(Arc::new(prompts)),
        Some(planwave_loadtest::trace_arrivals(&rows, speed)),
        output,
    ))
}

/// Synthetic prompts too many to draw per request are drawn this many times and cycled.
const SYNTHETIC_PROMPTS: usize = 1024;

/// The prompts of `--dataset` or `--input-tokens`; a dataset sets the request count when no
/// flag does.
fn data_prompts(
    a: &LoadtestArgs,
    traffic: &mut planwave_loadtest::Traffic,
    tokenizer: Option<&planwave_loadtest::TokenCounter>,
) -> anyhow::Result<Option<Arc<dyn PromptSet>>> {
    let requests = if let Some(path) = &a.dataset {
        let rows = planwave_loadtest::read_dataset(path)
            .map_err(|e| InvalidInput::one("--dataset", e.to_string()))?;
        if traffic.requests.is_none() && traffic.duration.is_none() {
            traffic.requests = Some(rows.len() as u64);
        }
        rows
    } else if let Some(tokens) = &a.input_tokens {
        let n = traffic
            .requests
            .map_or(SYNTHETIC_PROMPTS, |r| (r as usize).min(SYNTHETIC_PROMPTS));
        match tokenizer {
            Some(t) => t.prompts_of_lengths(&tokens.draw(n, a.seed)),
            None => planwave_loadtest::synthetic_prompts(tokens, n, a.seed),
        }
    } else {
        return Ok(None);
    };
    let builtin: Arc<dyn PromptSet> = Arc::new(planwave_prompts::Templates::builtin());
    Ok(Some(Arc::new(DataPrompts::new(requests, builtin))))
}

/// The load test's errors as this command reports them: bad input names its flag (exit 2).
pub(super) fn sweep_error(e: SweepError<anyhow::Error>) -> anyhow::Error {
    let invalid = |source_name: &str, problem: &str| InvalidInput::one(source_name, problem).into();
    match e {
        SweepError::Connect(e) => e,
        SweepError::Traffic(t) => super::loadtest_traffic::invalid(&t).into(),
        SweepError::Plan { what, problems } => InvalidInput {
            source_name: what.into(),
            problems,
        }
        .into(),
        SweepError::LatencyFileIds { path, problems } => InvalidInput {
            source_name: path.display().to_string(),
            problems,
        }
        .into(),
        SweepError::LatencyWithEndpoint => invalid(
            "--latency",
            "with --llm-url the server decides latency: start `sim-llm serve` with --latency-ms/--sigma or --latency-file (and give the same file here)",
        ),
        SweepError::LatenciesUnknown => invalid(
            "--save-latencies",
            "with --llm-url the latencies are not known before the run",
        ),
        other => other.into(),
    }
}

/// The figures as JSON (`--json`) or the workload line and the table.
fn print_results(a: &LoadtestArgs, outcome: &SweepOutcome, w: &WorkloadInfo) -> anyhow::Result<()> {
    if a.json {
        println!("{}", JsonReport::of(outcome, w).to_pretty_json()?);
    } else {
        print!("{}", planwave_loadtest::render_sweep_text(outcome, w));
        for turns in outcome.runs.iter().filter_map(|r| r.turns.as_deref()) {
            print!("{}", planwave_loadtest::render_turns(turns));
        }
    }
    if let Some(path) = &a.csv {
        let csv = planwave_loadtest::render_csv(&outcome.runs);
        std::fs::write(path, csv).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.traffic.html {
        let html = planwave_loadtest::render_sweep_html(outcome, w);
        std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("planwave loadtest: wrote {}", path.display());
    }
    Ok(())
}

fn http_provider(
    url: &str,
    a: &LoadtestArgs,
    headers: &planwave_loadtest::RequestHeaders,
) -> anyhow::Result<Arc<dyn LlmProvider>> {
    let options = LlmOptions {
        llm: Some(LlmArg::Openai),
        llm_base_url: Some(url.to_owned()),
        model: Some(a.model.clone()),
        config: None,
        no_stream: a.no_stream,
    };
    let prompts = PromptOptions {
        prompts: None,
        context_budget: None,
    };
    let mut settings = llm::settings(&[&options, &prompts, &Seed(a.seed)])?;
    settings.use_only_key_from(
        "--api-key-env",
        a.api_key_env.as_deref(),
        &planwave_config::ProcessEnv,
    )?;
    if workload::wants_text_endpoint(a) {
        return workload::text_endpoint(a, url, &settings, headers);
    }
    workload::add_headers(&mut settings, headers);
    Ok(super::telemetry::traced(planwave_runner::model_client(
        &settings,
        SimConfig::default(),
        &planwave_runner::Stderr,
    )?))
}
