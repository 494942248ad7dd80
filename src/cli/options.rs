//! Option groups shared by the commands that execute plans (`run`, `research`, `batch`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use planwave_config::{Flags, parse_positive_duration};
use planwave_engine::Schedule;
use planwave_llm::sim::{Latency, PlannerFault, SimConfig, TokenRate};

use super::exit::InvalidInput;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleArg {
    /// Start each task as soon as its own prerequisites are done.
    Dataflow,
    /// Start wave k+1 only when all of wave k is done (a barrier after every wave), for
    /// comparison.
    Waves,
}

/// How a plan is executed.
#[derive(Debug, Args)]
pub struct ExecOptions {
    /// Most subagents in flight (default: no cap beyond the plan's own parallelism).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: Option<u64>,
    #[arg(long, value_enum, default_value = "dataflow")]
    pub schedule: ScheduleArg,
    /// Retries of a task after a transient model error.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub retries: u32,
    /// Base of the exponential retry backoff (full jitter).
    #[arg(long, value_name = "MS", default_value_t = 200)]
    pub retry_backoff_ms: u64,
    /// Seed for the simulator and for retry jitter: the same seed replays the same run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// A task still unfinished after this long (all attempts) fails with a timeout: seconds,
    /// or with a unit (90s, 2m) (default: planwave.toml [run] task_timeout_secs, else none).
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub task_timeout: Option<Duration>,
    /// Stop the whole run after this long (seconds, or 90s, 2m, 1h), like Ctrl-C: finished
    /// work is kept and `planwave resume DIR` goes on; exit code 4 (default: planwave.toml
    /// [run] deadline_secs).
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub deadline: Option<Duration>,
}

impl super::llm::FlagGroup for ExecOptions {
    fn add_to(&self, flags: &mut Flags) {
        flags.schedule = Some(match self.schedule {
            ScheduleArg::Dataflow => Schedule::Dataflow,
            ScheduleArg::Waves => Schedule::Waves,
        });
        flags.concurrency = self.concurrency.map(|c| c as usize);
        flags.retries = Some(self.retries);
        flags.retry_backoff = Some(Duration::from_millis(self.retry_backoff_ms));
        flags.seed = Some(self.seed);
        flags.task_timeout = self.task_timeout;
        flags.deadline = self.deadline;
    }
}

/// The simulated LLM's behaviour (used when no model is configured, or with `--llm sim`).
#[derive(Debug, Args)]
pub struct SimOptions {
    /// Mean simulated latency per call; 0 means no delay.
    #[arg(long, value_name = "MS", default_value_t = 300.0)]
    pub sim_latency_ms: f64,
    /// Sigma of the lognormal latency (0 = every call takes exactly the mean).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub sim_sigma: f64,
    /// Stream answers at this many output tokens per second, for every role (`40`) or per
    /// role (`planner=40,subagent=20`, or `30,planner=40`); the latency is then the time to
    /// the first token. 0 (default): each answer arrives at once.
    #[arg(long, value_name = "RATE", value_parser = parse_token_rate, default_value = "0")]
    pub sim_tokens_per_sec: TokenRate,
    /// Task ids whose every attempt fails (comma-separated).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub sim_fail: Vec<String>,
    /// Task ids whose first attempt fails (with tools: after its tool calls have run).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub sim_flaky: Vec<String>,
    /// Task ids whose subagent panics.
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub sim_panic: Vec<String>,
    /// Task ids answered with a one-sentence section without figures (short, unquantified).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub sim_terse: Vec<String>,
    /// JSON map of task id to latency in ms (`{"1": 250}`), overriding the random latency.
    #[arg(long, value_name = "FILE")]
    pub sim_latency_file: Option<PathBuf>,
    /// What the simulated planner gets wrong on attempts 1, 2, ... (comma-separated:
    /// truncated, cycle, unknown-dep, prose, no-tasks); later attempts get a valid plan.
    #[arg(long, value_name = "FAULTS", value_delimiter = ',')]
    pub sim_planner_faults: Vec<PlannerFault>,
    #[command(flatten)]
    pub reflect: super::sim_reflect::SimReflectOptions,
}

fn set(ids: &[String]) -> HashSet<String> {
    ids.iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

impl SimOptions {
    pub fn sim_config(&self, seed: u64) -> Result<SimConfig, InvalidInput> {
        let latency_overrides = match &self.sim_latency_file {
            Some(path) => read_latency_file(path)?,
            None => HashMap::new(),
        };
        Ok(SimConfig {
            seed,
            latency: Latency::from_mean(self.sim_latency_ms, self.sim_sigma),
            fail: set(&self.sim_fail),
            flaky: set(&self.sim_flaky),
            panic: set(&self.sim_panic),
            terse: set(&self.sim_terse),
            latency_overrides,
            planner_faults: self.sim_planner_faults.clone(),
            reflect: self.reflect.script()?,
            token_rate: self.sim_tokens_per_sec.clone(),
        })
    }
}

fn parse_token_rate(text: &str) -> Result<TokenRate, String> {
    TokenRate::parse(text)
}

/// `{"<task id>": ms}`; ms may be fractional, never negative.
pub fn read_latency_file(path: &Path) -> Result<HashMap<String, Duration>, InvalidInput> {
    let name = path.display().to_string();
    let bad = |p: String| InvalidInput {
        source_name: name.clone(),
        problems: vec![p],
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let map: HashMap<String, f64> = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "expected a JSON object of task id to milliseconds: {e}"
        ))
    })?;
    map.into_iter()
        .map(|(id, ms)| {
            if ms.is_finite() && ms >= 0.0 {
                Ok((id, Duration::from_secs_f64(ms / 1000.0)))
            } else {
                Err(bad(format!(
                    "task {id}: latency {ms} is not a non-negative number of milliseconds"
                )))
            }
        })
        .collect()
}
