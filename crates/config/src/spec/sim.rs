//! The simulated LLM's behaviour (used when no model is configured, or with `--llm sim`), and
//! its script for the reflective loop (shared with `sim-llm serve`). Values are kept as given;
//! [`SimOptions::sim_config`] turns them into the simulator's [`SimConfig`].

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use planwave_llm::AgentRole;
use planwave_sim::{Latency, PlannerFault, ReflectScript, SimConfig, TaskFault, TokenRate};
use serde::{Deserialize, Serialize};

use super::text::{self, list};
use crate::SettingsError;

/// The simulated model's behaviour, the same for a job's simulator and for `sim-llm serve`'s
/// (which sets its own defaults and keeps its flags' earlier names as aliases). A job's
/// failures by task are [`SimTaskOptions`], its script for the loop [`SimReflectOptions`];
/// its latency file is the host's (`sim_latency_file`, a path on its disk).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct SimOptions {
    /// Mean simulated latency per call; 0 means no delay.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "MS", default_value_t = 300.0, value_parser = crate::parse_millis)
    )]
    #[serde(deserialize_with = "text::millis")]
    pub sim_latency_ms: f64,
    /// Sigma of the lognormal latency (0 = every call takes exactly the mean).
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "S", default_value_t = 1.0, value_parser = crate::parse_sigma)
    )]
    #[serde(deserialize_with = "text::sigma")]
    pub sim_sigma: f64,
    /// Stream answers at this many output tokens per second, for every role (`40`) or per
    /// role (`planner=40,subagent=20`, or `30,planner=40`); the latency is then the time to
    /// the first token. 0 (default): each answer arrives at once.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATE", value_parser = text::check_rate, default_value = "0"))]
    #[cfg_attr(feature = "openapi", schema(example = "planner=40,subagent=20"))]
    #[serde(deserialize_with = "text::token_rate")]
    pub sim_tokens_per_sec: String,
    /// What the simulated planner gets wrong on attempts 1, 2, ... (comma-separated:
    /// truncated, cycle, unknown-dep, prose, no-tasks); later attempts get a valid plan.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FAULTS", value_delimiter = ',', value_parser = text::checked::<PlannerFault>))]
    #[serde(deserialize_with = "text::list_of::<PlannerFault, _>")]
    pub sim_planner_faults: Vec<String>,
    /// Cache repeated prompt prefixes in 64-token blocks, as providers do: usage then
    /// reports the cached tokens (`cached_tokens` in run.json).
    #[cfg_attr(feature = "clap", arg(long))]
    pub sim_prefix_cache: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            sim_latency_ms: 300.0,
            sim_sigma: 1.0,
            sim_tokens_per_sec: "0".into(),
            sim_planner_faults: Vec::new(),
            sim_prefix_cache: false,
        }
    }
}

/// What a job's simulated subagents do by task id: fail, fail once, panic, answer tersely.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct SimTaskOptions {
    /// Task ids whose every attempt fails (comma-separated).
    #[cfg_attr(feature = "clap", arg(long, value_name = "IDS", value_delimiter = ','))]
    #[serde(deserialize_with = "list")]
    pub sim_fail: Vec<String>,
    /// Task ids whose first attempt fails (with tools: after its tool calls have run).
    #[cfg_attr(feature = "clap", arg(long, value_name = "IDS", value_delimiter = ','))]
    #[serde(deserialize_with = "list")]
    pub sim_flaky: Vec<String>,
    /// Task ids whose subagent panics.
    #[cfg_attr(feature = "clap", arg(long, value_name = "IDS", value_delimiter = ','))]
    #[serde(deserialize_with = "list")]
    pub sim_panic: Vec<String>,
    /// Task ids answered with a one-sentence section without figures (short, unquantified).
    #[cfg_attr(feature = "clap", arg(long, value_name = "IDS", value_delimiter = ','))]
    #[serde(deserialize_with = "list")]
    pub sim_terse: Vec<String>,
}

/// The simulator's script for the reflective loop: scores and replan decisions per round,
/// invalid first answers, and task failures in a round's first pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct SimReflectOptions {
    /// Evaluator's correctness per round (comma-separated, 0-100; the last repeats), e.g.
    /// 40,70,96. Default: from the share of completed sections.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "SCORES", value_delimiter = ',')
    )]
    #[serde(deserialize_with = "list")]
    pub sim_scores: Vec<f64>,
    /// Evaluator's overall score per round (default: correctness - 10); `is_successful` is
    /// overall >= 80.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "SCORES", value_delimiter = ',')
    )]
    #[serde(deserialize_with = "list")]
    pub sim_overall: Vec<f64>,
    /// Reflector's should_replan per round, e.g. true,true,false (default: any task failed).
    #[cfg_attr(feature = "clap", arg(long, value_name = "BOOLS", value_delimiter = ',', action = clap::ArgAction::Append))]
    #[serde(deserialize_with = "list")]
    pub sim_replan: Vec<bool>,
    /// Roles whose first answer per request is invalid (evaluator, reflector), to exercise
    /// the repair of answers.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "ROLES", value_delimiter = ',')
    )]
    #[serde(deserialize_with = "list")]
    pub sim_invalid: Vec<String>,
    /// Task failures in the first execution pass of a round: ROUND:TASK:KIND with KIND
    /// transient or fatal (comma-separated), e.g. 1:2:transient.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FAULTS", value_delimiter = ',', value_parser = text::checked::<TaskFault>))]
    #[serde(deserialize_with = "text::list_of::<TaskFault, _>")]
    pub sim_task_fail: Vec<String>,
    /// The strategy the simulated step-level reflection recommends (retry_step,
    /// replan_from_failure or complete_replan; default: by the failures' kind).
    #[cfg_attr(feature = "clap", arg(long, value_name = "STRATEGY", value_parser = ["retry_step", "replan_from_failure", "complete_replan"]))]
    #[serde(deserialize_with = "text::step_strategy")]
    pub sim_step_strategy: Option<String>,
}

fn set(ids: &[String]) -> HashSet<String> {
    ids.iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn parsed<T: std::str::FromStr>(flag: &str, items: &[String]) -> Result<Vec<T>, SettingsError>
where
    T::Err: std::fmt::Display,
{
    items
        .iter()
        .map(|i| {
            i.parse::<T>()
                .map_err(|e| SettingsError::setting(flag, e.to_string()))
        })
        .collect()
}

impl SimOptions {
    /// The simulator's configuration with the failures by task, the script for the loop and
    /// the latency file the host names (read here), every value checked.
    pub fn sim_config(
        &self,
        tasks: &SimTaskOptions,
        reflect: &SimReflectOptions,
        latency_file: Option<&Path>,
        seed: u64,
    ) -> Result<SimConfig, SettingsError> {
        let latency_overrides = match latency_file {
            Some(path) => read_latency_file(path)?,
            None => HashMap::new(),
        };
        let token_rate = TokenRate::parse(&self.sim_tokens_per_sec)
            .map_err(|e| SettingsError::setting("--sim-tokens-per-sec", e))?;
        Ok(SimConfig {
            seed,
            latency: Latency::from_mean(self.sim_latency_ms, self.sim_sigma),
            fail: set(&tasks.sim_fail),
            flaky: set(&tasks.sim_flaky),
            panic: set(&tasks.sim_panic),
            terse: set(&tasks.sim_terse),
            latency_overrides,
            planner_faults: parsed("--sim-planner-faults", &self.sim_planner_faults)?,
            reflect: reflect.script()?,
            token_rate,
            prefix_cache: self
                .sim_prefix_cache
                .then(planwave_sim::PrefixCacheConfig::default),
        })
    }
}

/// `{"<task id>": ms}`; ms may be fractional, never negative.
pub fn read_latency_file(path: &Path) -> Result<HashMap<String, Duration>, SettingsError> {
    let name = path.display().to_string();
    let bad = |p: String| SettingsError::setting(&name, p);
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

impl SimReflectOptions {
    /// The script, every score and role checked.
    pub fn script(&self) -> Result<ReflectScript, SettingsError> {
        for (flag, list) in [
            ("--sim-scores", &self.sim_scores),
            ("--sim-overall", &self.sim_overall),
        ] {
            if let Some(s) = list
                .iter()
                .find(|s| !(s.is_finite() && (0.0..=100.0).contains(*s)))
            {
                return Err(SettingsError::setting(
                    flag,
                    format!("{s} is not a score from 0 to 100"),
                ));
            }
        }
        let invalid = self
            .sim_invalid
            .iter()
            .map(|r| match r.trim() {
                "evaluator" => Ok(AgentRole::Evaluator),
                "reflector" => Ok(AgentRole::Reflector),
                o => Err(SettingsError::setting(
                    "--sim-invalid",
                    format!("{o:?} is not evaluator or reflector"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ReflectScript {
            scores: self.sim_scores.clone(),
            overall: self.sim_overall.clone(),
            replan: self.sim_replan.clone(),
            invalid,
            task_faults: parsed("--sim-task-fail", &self.sim_task_fail)?,
            step_strategy: self.sim_step_strategy.clone(),
        })
    }
}
