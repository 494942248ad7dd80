//! A request's `"options"`: the part of a job's spec ([`planwave_config::spec`]) a request may
//! set, as its own type. Its fields are named as the flags are (`-` written `_`) and typed
//! as the spec's, and it denies unknown fields: an option this server keeps for itself (a
//! path on its disk: `config`, `prompts`, `sim_latency_file`, `plan_cache`, `mcp_config`;
//! where the output goes; which model answers) is simply not a field, so a request naming
//! one gets `422` naming it, as does a value of the wrong type. Every problem is reported,
//! one per option, each deserialized on its own.

use std::num::{NonZeroU32, NonZeroU64};
use std::time::Duration;

use planwave_config::spec::text;
use planwave_config::spec::{JobSpec, LangArg, PlanFormatArg, ScheduleArg, Work};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// The options of `POST /api/runs` (and `POST /api/batches?options=`), as the flags of
/// `planwave run` / `planwave research` of the same name. Lists are arrays or one
/// comma-separated string; durations are seconds or a string with a unit (`"90s"`).
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiOptions {
    /// Most subagents in flight.
    #[schema(value_type = Option<u64>, minimum = 1)]
    pub concurrency: Option<NonZeroU64>,
    /// `dataflow` (default) or `waves`.
    #[schema(value_type = Option<String>)]
    pub schedule: Option<ScheduleArg>,
    pub retries: Option<u32>,
    pub retry_backoff_ms: Option<u64>,
    pub seed: Option<u64>,
    #[serde(default, with = "text::duration")]
    #[schema(value_type = Option<String>, example = "90s")]
    pub task_timeout: Option<Duration>,
    #[serde(default, with = "text::duration")]
    #[schema(value_type = Option<String>, example = "10m")]
    pub deadline: Option<Duration>,
    pub context_budget: Option<u64>,
    /// The job's metadata, `{"KEY": "VALUE"}`.
    #[serde(default, with = "text::meta")]
    #[schema(value_type = Option<Object>)]
    pub meta: Vec<(String, String)>,
    #[serde(default, deserialize_with = "text::some_millis")]
    pub sim_latency_ms: Option<f64>,
    #[serde(default, deserialize_with = "text::some_sigma")]
    pub sim_sigma: Option<f64>,
    #[serde(default, deserialize_with = "some_rate")]
    #[schema(value_type = Option<String>, example = "planner=40,subagent=20")]
    pub sim_tokens_per_sec: Option<String>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_fail: Vec<String>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_flaky: Vec<String>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_panic: Vec<String>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_terse: Vec<String>,
    #[serde(
        default,
        deserialize_with = "text::list_of::<planwave_sim::PlannerFault, _>"
    )]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_planner_faults: Vec<String>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<f64>>)]
    pub sim_scores: Vec<f64>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<f64>>)]
    pub sim_overall: Vec<f64>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<bool>>)]
    pub sim_replan: Vec<bool>,
    #[serde(default, deserialize_with = "text::list")]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_invalid: Vec<String>,
    #[serde(
        default,
        deserialize_with = "text::list_of::<planwave_sim::TaskFault, _>"
    )]
    #[schema(value_type = Option<Vec<String>>)]
    pub sim_task_fail: Vec<String>,
    #[serde(default, deserialize_with = "text::step_strategy")]
    pub sim_step_strategy: Option<String>,
    /// The simulator caches prompt prefixes as providers do (`--sim-prefix-cache`).
    #[serde(default)]
    pub sim_prefix_cache: Option<bool>,
    /// For a goal only: `zh` or `en`.
    #[schema(value_type = Option<String>)]
    pub lang: Option<LangArg>,
    /// For a goal only.
    #[schema(value_type = Option<u32>, minimum = 1)]
    pub planner_attempts: Option<NonZeroU32>,
    /// For a goal only: `tasks` or `steps`.
    #[schema(value_type = Option<String>)]
    pub plan_format: Option<PlanFormatArg>,
    /// For a goal only.
    #[schema(value_type = Option<u32>, minimum = 1)]
    pub max_rounds: Option<NonZeroU32>,
    /// Model calls through the provider's Batch API (`--batch-api`): half price at OpenAI,
    /// answers within 24 h. Needs the server's model to be an OpenAI-compatible server.
    pub batch_api: Option<bool>,
    /// With `batch_api`: the longest a ready call waits for others (`--batch-linger`).
    #[serde(default, with = "text::duration")]
    #[schema(value_type = Option<String>, example = "2s")]
    pub batch_linger: Option<Duration>,
    /// With `batch_api`: the first interval between polls (`--batch-poll`).
    #[serde(default, with = "text::duration")]
    #[schema(value_type = Option<String>, example = "5s")]
    pub batch_poll: Option<Duration>,
    /// With `batch_api`: the longest interval between polls (`--batch-poll-max`).
    #[serde(default, with = "text::duration")]
    #[schema(value_type = Option<String>, example = "5m")]
    pub batch_poll_max: Option<Duration>,
}

fn some_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    text::token_rate(d).map(Some)
}

impl ApiOptions {
    /// The options of a request, or every problem with them (`options.NAME: ...`).
    pub fn from_map(options: &Map<String, Value>) -> Result<ApiOptions, Vec<String>> {
        let problems: Vec<String> = options
            .iter()
            .filter_map(|(name, value)| {
                let one = Map::from_iter([(name.clone(), value.clone())]);
                serde_json::from_value::<ApiOptions>(Value::Object(one))
                    .err()
                    .map(|e| format!("options.{name}: {e}"))
            })
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        serde_json::from_value(Value::Object(options.clone())).map_err(|e| vec![e.to_string()])
    }

    /// The options set onto `spec` (the server's own options already in it), or the ones
    /// only a goal may have when `spec` runs a plan.
    pub fn apply(&self, spec: &mut JobSpec) -> Result<(), Vec<String>> {
        match &mut spec.work {
            Work::Goal { research, .. } => {
                research.max_rounds = self.max_rounds.map(NonZeroU32::get);
                research.planner.lang = self.lang;
                research.planner.planner_attempts = self.planner_attempts.map(NonZeroU32::get);
                research.planner.plan_format = self.plan_format;
            }
            Work::Plan { .. } => {
                let research_only = [
                    ("lang", self.lang.is_some()),
                    ("planner_attempts", self.planner_attempts.is_some()),
                    ("plan_format", self.plan_format.is_some()),
                    ("max_rounds", self.max_rounds.is_some()),
                ];
                let problems: Vec<String> = research_only
                    .iter()
                    .filter(|(_, set)| *set)
                    .map(|(name, _)| format!("options.{name}: only for a goal (research)"))
                    .collect();
                if !problems.is_empty() {
                    return Err(problems);
                }
            }
        }
        let o = &mut spec.options;
        let exec = &mut o.exec;
        exec.concurrency = self.concurrency.map(NonZeroU64::get).or(exec.concurrency);
        exec.schedule = self.schedule.unwrap_or(exec.schedule);
        exec.retries = self.retries.unwrap_or(exec.retries);
        exec.retry_backoff_ms = self.retry_backoff_ms.unwrap_or(exec.retry_backoff_ms);
        exec.seed = self.seed.unwrap_or(exec.seed);
        exec.task_timeout = self.task_timeout.or(exec.task_timeout);
        exec.deadline = self.deadline.or(exec.deadline);
        o.model.prompts.context_budget = self.context_budget.or(o.model.prompts.context_budget);
        o.meta.meta.extend(self.meta.iter().cloned());
        self.apply_sim(&mut o.model.sim);
        self.apply_batch(&mut o.batch)
    }

    /// `batch_api` and its timing, which (as their flags) only go with it.
    fn apply_batch(
        &self,
        b: &mut planwave_config::spec::BatchApiOptions,
    ) -> Result<(), Vec<String>> {
        b.batch_api = self.batch_api.unwrap_or(b.batch_api);
        b.batch_linger = self.batch_linger.or(b.batch_linger);
        b.batch_poll = self.batch_poll.or(b.batch_poll);
        b.batch_poll_max = self.batch_poll_max.or(b.batch_poll_max);
        let timing = [
            ("batch_linger", self.batch_linger.is_some()),
            ("batch_poll", self.batch_poll.is_some()),
            ("batch_poll_max", self.batch_poll_max.is_some()),
        ];
        let problems: Vec<String> = timing
            .iter()
            .filter(|(_, set)| *set && !b.batch_api)
            .map(|(name, _)| format!("options.{name}: only with batch_api"))
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    fn apply_sim(&self, sim: &mut planwave_config::spec::SimOptions) {
        let list = |to: &mut Vec<String>, from: &Vec<String>| {
            if !from.is_empty() {
                to.clone_from(from);
            }
        };
        sim.sim_latency_ms = self.sim_latency_ms.unwrap_or(sim.sim_latency_ms);
        sim.sim_sigma = self.sim_sigma.unwrap_or(sim.sim_sigma);
        if let Some(rate) = &self.sim_tokens_per_sec {
            sim.sim_tokens_per_sec.clone_from(rate);
        }
        list(&mut sim.sim_fail, &self.sim_fail);
        list(&mut sim.sim_flaky, &self.sim_flaky);
        list(&mut sim.sim_panic, &self.sim_panic);
        list(&mut sim.sim_terse, &self.sim_terse);
        list(&mut sim.sim_planner_faults, &self.sim_planner_faults);
        let r = &mut sim.reflect;
        if !self.sim_scores.is_empty() {
            r.sim_scores.clone_from(&self.sim_scores);
        }
        if !self.sim_overall.is_empty() {
            r.sim_overall.clone_from(&self.sim_overall);
        }
        if !self.sim_replan.is_empty() {
            r.sim_replan.clone_from(&self.sim_replan);
        }
        list(&mut r.sim_invalid, &self.sim_invalid);
        list(&mut r.sim_task_fail, &self.sim_task_fail);
        r.sim_step_strategy = self
            .sim_step_strategy
            .clone()
            .or(r.sim_step_strategy.take());
        sim.sim_prefix_cache = self.sim_prefix_cache.unwrap_or(sim.sim_prefix_cache);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn plan_spec() -> JobSpec {
        JobSpec {
            work: Work::Plan {
                plan: "plan.json".into(),
                recover: false,
            },
            out: "out".into(),
            options: Default::default(),
        }
    }

    #[test]
    fn options_set_the_spec_as_the_flags_would() {
        let o = ApiOptions::from_map(&map(json!({
            "sim_latency_ms": 300, "sim_fail": "4", "sim_flaky": ["1", 2],
            "meta": {"client": "acme"}, "seed": 7, "deadline": "2m"
        })))
        .unwrap();
        let mut spec = plan_spec();
        o.apply(&mut spec).unwrap();
        let opts = &spec.options;
        assert_eq!(opts.model.sim.sim_latency_ms, 300.0);
        assert_eq!(opts.model.sim.sim_fail, ["4"]);
        assert_eq!(opts.model.sim.sim_flaky, ["1", "2"]);
        assert_eq!(opts.meta.meta, [("client".into(), "acme".into())]);
        assert_eq!(opts.exec.seed, 7);
        assert_eq!(opts.exec.deadline, Some(Duration::from_secs(120)));
        assert_eq!(opts.exec.retries, 1, "unset keeps the flag's default");
    }

    #[test]
    fn batch_api_and_its_timing_set_the_spec_and_the_timing_needs_it() {
        let o = ApiOptions::from_map(&map(json!({
            "batch_api": true, "batch_linger": "500ms", "batch_poll": 1, "batch_poll_max": "2s"
        })))
        .unwrap();
        let mut spec = plan_spec();
        o.apply(&mut spec).unwrap();
        let b = &spec.options.batch;
        assert!(b.batch_api);
        assert_eq!(b.batch_linger, Some(Duration::from_millis(500)));
        assert_eq!(b.batch_poll, Some(Duration::from_secs(1)));
        assert_eq!(b.batch_poll_max, Some(Duration::from_secs(2)));
        let o = ApiOptions::from_map(&map(json!({"batch_poll": "1s"}))).unwrap();
        assert_eq!(
            o.apply(&mut plan_spec()).unwrap_err(),
            ["options.batch_poll: only with batch_api"]
        );
        assert!(ApiOptions::from_map(&map(json!({"batch_linger": "0s"}))).is_err());
    }

    #[test]
    fn server_paths_the_model_and_bad_values_are_refused_with_every_problem() {
        let err = ApiOptions::from_map(&map(json!({
            "config": "/etc/passwd", "llm_base_url": "http://x", "sim_latency_ms": "soon",
            "concurrency": 0
        })))
        .unwrap_err();
        assert_eq!(err.len(), 4, "{err:?}");
        assert!(err[0].starts_with("options.concurrency: "), "{err:?}");
        assert!(
            err[1].starts_with("options.config: unknown field `config`"),
            "{err:?}"
        );
        assert!(
            err[2].starts_with("options.llm_base_url: unknown field"),
            "{err:?}"
        );
        assert!(
            err[3].starts_with("options.sim_latency_ms: invalid type"),
            "{err:?}"
        );
        let o = ApiOptions::from_map(&map(json!({"max_rounds": 2}))).unwrap();
        assert_eq!(
            o.apply(&mut plan_spec()).unwrap_err(),
            ["options.max_rounds: only for a goal (research)"]
        );
    }
}
