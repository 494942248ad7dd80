//! The flags assembled into the load test's [`SweepOptions`]: the plan, the prompts of a trace,
//! a dataset or synthetic lengths, the endpoint's client; and the sweep's errors named by
//! their flags.

use std::sync::Arc;
use std::time::Duration;

use planwave_config::spec::{
    LlmArg, LlmOptions, ScheduleArg, Seed, read_latency_file, settings_of,
};
use planwave_llm::LlmProvider;
use planwave_prompts::PromptSet;
use planwave_record::Schedule;
use planwave_runner::eprintln;
use planwave_runner::ops::InvalidInput;
use planwave_sim::SimConfig;

use planwave_loadtest::{
    DataPrompts, Endpoint, LatencyFile, MAX_SERIES, PlanChoice, RequestHeaders, ScrapeTarget,
    Shape, SweepError, SweepOptions, SyntheticSpec, TokenCounter, TokenizerError, Traffic,
};

use crate::WrapProvider;
use crate::flags::workload;
use crate::flags::{LoadtestArgs, ShapeArg};

/// The flags as the load test's options.
/// `round` is the `--repeat` round (0 without): its runs draw synthetic prompts of their own.
pub(crate) fn sweep_options(
    a: &Arc<LoadtestArgs>,
    wrap: WrapProvider,
    round: u64,
) -> anyhow::Result<SweepOptions<anyhow::Error>> {
    workload::check(a)?;
    let tokenizer = workload::tokenizer(a)?;
    let headers = workload::headers(a)?;
    let mut plan = match &a.plan {
        Some(path) => PlanChoice::Given {
            plan: Arc::new(planwave_runner::ops::load_plan(
                path,
                &planwave_runner::ops::Stderr,
            )?),
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
                connect: Box::new(move || http_provider(&url2, &args, &h, wrap)),
            }
        }
    };
    let mut traffic = a.traffic.traffic(&a.concurrency);
    let mut sessions = None;
    let mut synthetic = None;
    let (prompts, arrivals, trace_output) =
        match workload::sessions(a, &mut traffic, tokenizer.as_deref())? {
            Some(s) => {
                plan = s.plan;
                sessions = Some(s.map);
                (Some(s.prompts), None, None)
            }
            None => match &a.trace {
                Some(path) => trace_workload(path, a.speed, &mut traffic, tokenizer.as_deref())?,
                None => {
                    let (prompts, spec) = data_prompts(a, &mut traffic, tokenizer.as_ref())?;
                    synthetic = spec;
                    (prompts, None, None)
                }
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
        scrape_metrics: scrape_target(a)?,
        shaping,
        synthetic,
        salt: round,
    })
}

/// `--scrape-metrics` and the series `--scrape-series` keeps, the names checked.
fn scrape_target(a: &LoadtestArgs) -> anyhow::Result<Option<ScrapeTarget>> {
    let Some(url) = &a.scrape_metrics else {
        return Ok(None);
    };
    let names = &a.scrape_series;
    let bad = |problem: String| InvalidInput::one("--scrape-series", problem);
    if names.len() > MAX_SERIES {
        return Err(bad(format!("{} names, more than {MAX_SERIES}", names.len())).into());
    }
    let metric_name = |n: &str| {
        !n.is_empty()
            && !n.starts_with(|c: char| c.is_ascii_digit())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    if let Some(n) = names.iter().find(|n| !metric_name(n)) {
        return Err(bad(format!(
            "{n:?} is not a metric name (letters, digits, _ and :)"
        ))
        .into());
    }
    Ok(Some(ScrapeTarget {
        url: url.clone(),
        series: names.clone(),
    }))
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
    traffic: &mut Traffic,
    tokenizer: Option<&TokenCounter>,
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
    let arrivals = planwave_loadtest::trace_arrivals(&rows, speed)
        .map_err(|e| InvalidInput::one("--speed", e))?;
    traffic.requests = Some(rows.len() as u64);
    let lengths: Vec<u64> = rows.iter().map(|r| r.input_tokens).collect();
    let builtin: Arc<dyn PromptSet> = Arc::new(planwave_prompts::Templates::builtin());
    let requests = match tokenizer {
        Some(t) => t.prompts_of_lengths(&lengths).map_err(tokenizer_error)?,
        None => planwave_loadtest::prompts_of_lengths(&lengths),
    };
    let prompts = DataPrompts::new(requests, builtin);
    let output: Option<Vec<u32>> = rows
        .iter()
        .map(|r| r.output_tokens.map(|t| t.clamp(1, u32::MAX as u64) as u32))
        .collect();
    Ok((Some(Arc::new(prompts)), Some(arrivals), output))
}

/// Synthetic prompts too many to draw per request are drawn this many times and cycled.
const SYNTHETIC_PROMPTS: usize = 1024;

/// A dataset's prompts, or how synthetic ones are drawn (neither: planwave's own).
type Prompts = (Option<Arc<dyn PromptSet>>, Option<SyntheticSpec>);

/// The prompts of `--dataset`, or how `--input-tokens` draws them (each run afresh); a
/// dataset sets the request count when no flag does.
fn data_prompts(
    a: &LoadtestArgs,
    traffic: &mut Traffic,
    tokenizer: Option<&Arc<TokenCounter>>,
) -> anyhow::Result<Prompts> {
    if let Some(path) = &a.dataset {
        let rows = planwave_loadtest::read_dataset(path)
            .map_err(|e| InvalidInput::one("--dataset", e.to_string()))?;
        if traffic.requests.is_none() && traffic.duration.is_none() {
            traffic.requests = Some(rows.len() as u64);
        }
        let builtin: Arc<dyn PromptSet> = Arc::new(planwave_prompts::Templates::builtin());
        return Ok((Some(Arc::new(DataPrompts::new(rows, builtin))), None));
    }
    let Some(tokens) = &a.input_tokens else {
        return Ok((None, None));
    };
    let n = traffic
        .requests
        .map_or(SYNTHETIC_PROMPTS, |r| (r as usize).min(SYNTHETIC_PROMPTS));
    let lengths = planwave_loadtest::prompt_lengths(tokens, n, a.seed);
    if let Some(t) = tokenizer {
        // Sized when sent; a tokenizer that cannot size them is refused before anything is.
        t.prompts_of_lengths(&lengths[..1])
            .map_err(tokenizer_error)?;
    }
    let spec = SyntheticSpec {
        lengths: Arc::new(lengths),
        seed: a.seed,
        shared: a.shared_prefix,
        tokenizer: tokenizer.cloned(),
    };
    Ok((None, Some(spec)))
}

/// A tokenizer that cannot size a prompt, named by its flag (exit 2).
fn tokenizer_error(e: TokenizerError) -> anyhow::Error {
    InvalidInput::one("--tokenizer", e.to_string()).into()
}

/// The load test's errors as this command reports them: bad input names its flag (exit 2).
pub(crate) fn sweep_error(e: SweepError<anyhow::Error>) -> anyhow::Error {
    let invalid = |source_name: &str, problem: &str| InvalidInput::one(source_name, problem).into();
    match e {
        SweepError::Connect(e) => e,
        SweepError::Traffic(t) => crate::flags::traffic::invalid(&t).into(),
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

fn http_provider(
    url: &str,
    a: &LoadtestArgs,
    headers: &RequestHeaders,
    wrap: WrapProvider,
) -> anyhow::Result<Arc<dyn LlmProvider>> {
    let options = LlmOptions {
        llm: Some(LlmArg::Openai),
        llm_base_url: Some(url.to_owned()),
        model: Some(a.model.clone()),
        config: None,
        no_stream: a.no_stream,
        ..LlmOptions::default()
    };
    let mut settings = settings_of(&[&options, &Seed(a.seed)], &planwave_config::ProcessEnv)?;
    settings.use_only_key_from(
        "--api-key-env",
        a.api_key_env.as_deref(),
        &planwave_config::ProcessEnv,
    )?;
    if workload::wants_text_endpoint(a) {
        return workload::text_endpoint(a, url, &settings, headers);
    }
    workload::add_headers(&mut settings, headers);
    Ok(wrap(planwave_runner::ops::model_client(
        &settings,
        SimConfig::default(),
        &Once,
    )?))
}

/// Notes said once per process: the endpoint's client is built at every point of a sweep
/// (and every `--repeat` round), and its `model … via …` line is worth reading once.
struct Once;

impl planwave_runner::ops::Notes for Once {
    fn note(&self, line: &str) {
        static SAID: std::sync::Mutex<std::collections::BTreeSet<String>> =
            std::sync::Mutex::new(std::collections::BTreeSet::new());
        let new = SAID
            .lock()
            .map(|mut said| said.insert(line.to_owned()))
            .unwrap_or(true);
        if new {
            eprintln!("{line}");
        }
    }
}
