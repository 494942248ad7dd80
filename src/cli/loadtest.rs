//! `planwave loadtest`: runs a generated (or given) workload through the engine and prints
//! its figures as a table or JSON.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use planwave_engine::{RetryPolicy, RunConfig};
use planwave_llm::LlmProvider;
use planwave_llm::sim::{SIM_MODEL, SimConfig, SimProvider};
use planwave_loadtest::{
    LatencyModel, LoadReport, LoadRequest, Probe, Shape, check_latency_ids, planned_latencies,
    render_load_table,
};
use planwave_plan::ValidatedPlan;
use planwave_record::{NullSink, Schedule};
use planwave_storage::Journal;
use serde_json::json;

use super::exit::{INTERRUPTED, InvalidInput, OK, Outcome, PARTIAL};
use super::input::load_plan;
use super::llm::{self, LlmArg, LlmOptions, PromptOptions, Seed};
use super::loadtest_traffic::{Point, TrafficOptions};
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

const DEFAULT_LATENCY: LatencyModel = LatencyModel::LogNormal {
    mean_ms: 100.0,
    sigma: 1.0,
};

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
    #[arg(long, value_name = "MODEL")]
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
    /// Print the figures as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub traffic: TrafficOptions,
}

pub async fn loadtest(a: LoadtestArgs) -> anyhow::Result<Outcome> {
    if !a.traffic.compare.is_empty() {
        return super::loadtest_compare::compare(
            &a.traffic.compare,
            a.json,
            a.traffic.html.as_ref(),
        );
    }
    let points = a.traffic.points(&a.concurrency)?;
    let journal = match &a.journal {
        Some(path) => Some(Arc::new(
            Journal::open(path, true).with_context(|| format!("opening {}", path.display()))?,
        )),
        None => None,
    };
    let interrupt = planwave_runner::CtrlC::listen();
    let cancel = interrupt.token();
    let mut runs: Vec<LoadReport> = Vec::new();
    let mut schedules = a.schedule.clone();
    schedules.dedup();
    let mut last_plan = None;
    'points: for point in &points {
        let (plan, source) = workload_plan(&a, point)?;
        let plan = Arc::new(plan);
        let w = Workload::new(&a, plan.clone())?;
        for schedule in &schedules {
            let at = At {
                point,
                schedule: *schedule,
                serving: a.traffic.wants_serving(a.llm_url.is_some(), points.len()),
            };
            let report = run_point(&a, &w, &at, journal.clone(), &cancel).await?;
            runs.push(report);
            if cancel.is_cancelled() {
                break 'points;
            }
        }
        last_plan = Some((plan, source, w.model_label));
    }
    drop(interrupt);
    if let Some(path) = &a.timeline {
        write_timeline(path, &runs)?;
    }
    if let Some(j) = &journal {
        j.close().context("writing the journal")?;
    }
    let Some((plan, source, model_label)) = last_plan else {
        return Ok(Outcome(INTERRUPTED));
    };
    let latency = a.latency.unwrap_or(DEFAULT_LATENCY);
    print_results(&a, &plan, &source, latency, &model_label, &runs)?;
    Ok(Outcome(if cancel.is_cancelled() {
        INTERRUPTED
    } else if runs.iter().all(|r| r.completed == r.tasks) {
        OK
    } else {
        PARTIAL
    }))
}

/// A point's plan and who answers it.
struct Workload {
    plan: Arc<ValidatedPlan>,
    provider: Arc<dyn LlmProvider>,
    planned: Option<Vec<f64>>,
    model_label: String,
}

impl Workload {
    fn new(a: &LoadtestArgs, plan: Arc<ValidatedPlan>) -> anyhow::Result<Workload> {
        let overrides = match &a.latency_file {
            Some(path) => {
                let map = read_latency_file(path)?;
                let unknown = check_latency_ids(&plan, &map);
                if !unknown.is_empty() {
                    return Err(InvalidInput {
                        source_name: path.display().to_string(),
                        problems: unknown,
                    }
                    .into());
                }
                map
            }
            None => Default::default(),
        };
        let sim = SimConfig {
            seed: a.seed,
            latency: a.latency.unwrap_or(DEFAULT_LATENCY).sim_latency(),
            latency_overrides: overrides,
            ..SimConfig::default()
        };
        let (provider, planned, model_label) = model(a, &plan, &sim)?;
        if let Some(path) = &a.save_latencies {
            save_latencies(path, &plan, planned.as_deref())?;
        }
        Ok(Workload {
            plan,
            provider,
            planned,
            model_label,
        })
    }
}

/// Where in the sweep a run is.
struct At<'a> {
    point: &'a Point,
    schedule: ScheduleArg,
    /// Measure serving metrics.
    serving: bool,
}

/// One run: a schedule at one point of the sweep, with the endpoint's own figures when it
/// reports them.
async fn run_point(
    a: &LoadtestArgs,
    w: &Workload,
    at: &At<'_>,
    journal: Option<Arc<Journal>>,
    cancel: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<LoadReport> {
    let point = at.point;
    let schedule = match at.schedule {
        ScheduleArg::Dataflow => Schedule::Dataflow,
        ScheduleArg::Waves => Schedule::Waves,
    };
    let label = point.label();
    eprintln!(
        "planwave loadtest: {} tasks, {} schedule{}, model: {}",
        w.plan.len(),
        schedule.as_str(),
        label
            .as_deref()
            .map(|l| format!(", {l}"))
            .unwrap_or_default(),
        w.model_label
    );
    let server_before = match (&a.llm_url, at.serving) {
        (Some(url), true) => super::loadtest_traffic::server_stats(url).await,
        _ => None,
    };
    let mut report = planwave_loadtest::run(LoadRequest {
        plan: w.plan.clone(),
        provider: w.provider.clone(),
        prompts: Arc::new(planwave_prompts::Templates::builtin()),
        sink: Arc::new(NullSink),
        journal,
        config: RunConfig {
            schedule,
            concurrency: point.concurrency.map(|c| c as usize),
            retry: RetryPolicy {
                max_retries: a.retries,
                ..RetryPolicy::default()
            },
            seed: a.seed,
            ..RunConfig::default()
        },
        planned_ms: w.planned.clone(),
        cancel: cancel.clone(),
        timeline: a.timeline.is_some() || a.traffic.html.is_some(),
        on_start: progress_printer(w.plan.len()),
        arrivals: a.traffic.arrivals(&w.plan, point, a.seed),
        serving: at.serving.then(|| a.traffic.serving_options()),
    })
    .await
    .context("running the workload")?;
    report.label = label;
    if let (Some(before), Some(url), Some(serving)) =
        (server_before, &a.llm_url, report.serving.as_mut())
        && let Some(after) = super::loadtest_traffic::server_stats(url).await
    {
        serving.server = Some(super::loadtest_traffic::server_side(&before, &after));
    }
    Ok(report)
}

/// Who answers and what latency each task is planned to take (known with the in-process
/// simulator, or a replayed latency file), and the model's label.
type Model = (Arc<dyn LlmProvider>, Option<Vec<f64>>, String);

fn model(a: &LoadtestArgs, plan: &ValidatedPlan, sim: &SimConfig) -> anyhow::Result<Model> {
    let Some(url) = &a.llm_url else {
        return Ok((
            Arc::new(SimProvider::new(sim.clone())),
            Some(planned_latencies(plan, sim)),
            "in-process simulator".into(),
        ));
    };
    if a.latency.is_some() {
        return Err(InvalidInput {
            source_name: "--latency".into(),
            problems: vec![
                "with --llm-url the server decides latency: start `sim-llm serve` with --latency-ms/--sigma or --latency-file (and give the same file here)".into(),
            ],
        }
        .into());
    }
    Ok((
        http_provider(url, a)?,
        // Only a replayed file says what the server will take; else measure.
        a.latency_file.as_ref().map(|_| {
            let only_file = SimConfig {
                latency: planwave_llm::sim::Latency::Zero,
                ..sim.clone()
            };
            planned_latencies(plan, &only_file)
        }),
        url.clone(),
    ))
}

/// `--save-latencies`: the planned latency per task id.
fn save_latencies(
    path: &std::path::Path,
    plan: &ValidatedPlan,
    planned: Option<&[f64]>,
) -> anyhow::Result<()> {
    let planned = planned.ok_or_else(|| InvalidInput {
        source_name: "--save-latencies".into(),
        problems: vec!["with --llm-url the latencies are not known before the run".into()],
    })?;
    let map: serde_json::Map<String, serde_json::Value> = (0..plan.len())
        .map(|i| (plan.id(i).to_string(), json!(planned[i])))
        .collect();
    std::fs::write(path, serde_json::to_vec_pretty(&map)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The figures as JSON (`--json`) or the workload line and the table.
fn print_results(
    a: &LoadtestArgs,
    plan: &ValidatedPlan,
    source: &str,
    latency: LatencyModel,
    model_label: &str,
    runs: &[LoadReport],
) -> anyhow::Result<()> {
    if a.json {
        let out = json!({
            "workload": {
                "source": source,
                "tasks": plan.len(),
                "waves": plan.waves().len(),
                "seed": a.seed,
                "latency": latency.to_string(),
                "latency_file": a.latency_file.as_ref().map(|p| p.display().to_string()),
                "model": model_label,
            },
            "runs": runs,
            "sweep": super::loadtest_traffic::sweep_summary(runs),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "workload: {source}, {} tasks in {} waves, latency {}{}, model: {model_label}",
            plan.len(),
            plan.waves().len(),
            if a.llm_url.is_some() {
                "decided by the server".to_string()
            } else {
                latency.to_string()
            },
            a.latency_file
                .as_ref()
                .map(|p| format!(" (per-task from {})", p.display()))
                .unwrap_or_default(),
        );
        print!("{}", render_load_table(runs));
        if runs.iter().any(|r| r.serving.is_some()) {
            println!();
            print!("{}", planwave_loadtest::render_serving_table(runs));
        }
        if let Some(sweep) = super::loadtest_traffic::sweep_summary(runs) {
            println!("{}", super::loadtest_traffic::sweep_line(&sweep));
        }
    }
    if let Some(path) = &a.traffic.html {
        let html = planwave_loadtest::render_html(&planwave_loadtest::HtmlInput {
            title: format!("planwave loadtest: {source}, model {model_label}"),
            runs,
            plan: Some(plan),
        });
        std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("planwave loadtest: wrote {}", path.display());
    }
    Ok(())
}

fn write_timeline(path: &std::path::Path, runs: &[LoadReport]) -> anyhow::Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    for t in runs.iter().filter_map(|r| r.timeline.as_ref()) {
        t.write_jsonl(&mut out)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    std::io::Write::flush(&mut out).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn workload_plan(a: &LoadtestArgs, point: &Point) -> Result<(ValidatedPlan, String), InvalidInput> {
    if let Some(n) = a.traffic.request_count(point) {
        let plan = ValidatedPlan::new(planwave_loadtest::generate(Shape::Wide, n, 0, None, a.seed))
            .map_err(|e| InvalidInput {
                source_name: "generated plan".into(),
                problems: e.0.iter().map(|p| p.to_string()).collect(),
            })?;
        return Ok((plan, format!("{n} independent requests")));
    }
    let (plan, source) = base_plan(a)?;
    if a.traffic.plan_rate.is_some() {
        let copies = a.traffic.plan_count();
        let spec = planwave_loadtest::replicate(plan.spec(), copies);
        let plan = ValidatedPlan::new(spec).map_err(|e| InvalidInput {
            source_name: "replicated plan".into(),
            problems: e.0.iter().map(|p| p.to_string()).collect(),
        })?;
        return Ok((plan, format!("{copies} plans of {source}")));
    }
    Ok((plan, source))
}

fn base_plan(a: &LoadtestArgs) -> Result<(ValidatedPlan, String), InvalidInput> {
    if let Some(path) = &a.plan {
        return Ok((load_plan(path)?, format!("plan {}", path.display())));
    }
    let shape = match a.shape {
        ShapeArg::Wide => Shape::Wide,
        ShapeArg::Chain => Shape::Chain,
        ShapeArg::Layered => Shape::Layered,
        ShapeArg::Random => Shape::Random,
    };
    let spec = planwave_loadtest::generate(
        shape,
        a.tasks as usize,
        a.fan_in,
        a.width.map(|w| w as usize),
        a.seed,
    );
    let plan = ValidatedPlan::new(spec).map_err(|e| InvalidInput {
        source_name: "generated plan".into(),
        problems: e.0.iter().map(|p| p.to_string()).collect(),
    })?;
    let fan_in = match shape {
        Shape::Random | Shape::Layered => format!(", fan-in {}", a.fan_in),
        _ => String::new(),
    };
    Ok((
        plan,
        format!("{} (seed {}{fan_in})", shape.as_str(), a.seed),
    ))
}

fn http_provider(url: &str, a: &LoadtestArgs) -> anyhow::Result<Arc<dyn LlmProvider>> {
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
    only_the_named_key(&mut settings, a.api_key_env.as_deref())?;
    Ok(super::telemetry::traced(planwave_runner::model_client(
        &settings,
        SimConfig::default(),
        &planwave_runner::Stderr,
    )?))
}

/// Replaces whatever key the settings found with the one `--api-key-env` names, or none.
fn only_the_named_key(
    settings: &mut planwave_config::Settings,
    var: Option<&str>,
) -> Result<(), InvalidInput> {
    let planwave_config::LlmChoice::OpenAi {
        config,
        api_key_source,
    } = &mut settings.llm
    else {
        return Ok(());
    };
    config.api_key = None;
    *api_key_source = None;
    if let Some(var) = var {
        let value = std::env::var(var).unwrap_or_default();
        config.api_key = Some(planwave_llm::ApiKey::new(value).ok_or_else(|| {
            InvalidInput::one("--api-key-env", format!("${var} is not set or empty"))
        })?);
        *api_key_source = Some(format!("${var}"));
    }
    Ok(())
}

/// A progress line on a terminal every second: long runs should show they are moving.
fn progress_printer(total: usize) -> Option<Box<dyn FnOnce(Arc<Probe>) + Send>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(Box::new(move |probe: Arc<Probe>| {
        let weak = Arc::downgrade(&probe);
        drop(probe);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let Some(p) = weak.upgrade() else { break };
                let done = p.tasks_done();
                eprint!("\r  {done}/{total} tasks done");
                if done >= total {
                    break;
                }
            }
            eprintln!();
        });
    }))
}
