//! Workloads: which plan, and how long each of its model calls should take; the requests'
//! prompts from data (`dataset`, `trace`), multi-turn `sessions`, the `arrivals` of an open
//! loop, distinct `synthetic` prompts, and a model's `tokenizer`; the bounds all of them check their numbers against
//! (`limits`).

pub(crate) mod arrivals;
pub(crate) mod dataset;
pub(crate) mod limits;
pub(crate) mod sessions;
pub(crate) mod synthetic;
pub(crate) mod tokenizer;
pub(crate) mod trace;

use std::collections::HashMap;
use std::time::Duration;

use planwave_plan::{PlanSpec, ValidatedPlan, generate as gen_plan};
use planwave_sim::{Latency, SimConfig};

/// The shape of a generated plan (see `planwave_plan::generate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Independent tasks: everything in flight at once.
    Wide,
    /// Each task depends on the one before: no parallelism at all.
    Chain,
    /// Layers of `width` tasks, each depending on up to `fan_in` tasks of the layer before.
    Layered,
    /// A random DAG; each task depends on up to `fan_in` recent earlier tasks.
    Random,
}

impl Shape {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Shape::Wide => "wide",
            Shape::Chain => "chain",
            Shape::Layered => "layered",
            Shape::Random => "random",
        }
    }
}

/// A generated plan of `tasks` tasks. `width` only matters for `Layered` (default
/// `ceil(sqrt(tasks))`).
pub(crate) fn generate(
    shape: Shape,
    tasks: usize,
    fan_in: usize,
    width: Option<usize>,
    seed: u64,
) -> PlanSpec {
    match shape {
        Shape::Wide => gen_plan::wide(tasks),
        Shape::Chain => gen_plan::chain(tasks),
        Shape::Layered => {
            let w = width.unwrap_or_else(|| (tasks as f64).sqrt().ceil().max(1.0) as usize);
            gen_plan::layered(tasks, w, fan_in, seed)
        }
        Shape::Random => gen_plan::random(tasks, fan_in, seed),
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("latency {input:?}: {problem} (expected fixed:MS or lognormal:MEAN_MS:SIGMA)")]
pub struct LatencyModelError {
    pub input: String,
    pub problem: String,
}

/// `fixed:MS` or `lognormal:MEAN_MS:SIGMA` (sigma of the underlying normal; the mean is the
/// distribution's mean, not its median).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LatencyModel {
    Fixed { ms: f64 },
    LogNormal { mean_ms: f64, sigma: f64 },
}

impl std::str::FromStr for LatencyModel {
    type Err = LatencyModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem: &str| LatencyModelError {
            input: s.to_owned(),
            problem: problem.to_owned(),
        };
        let num = |t: &str, what: &str| -> Result<f64, LatencyModelError> {
            match t.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(bad(&format!("{what} {t:?} is not a non-negative number"))),
            }
        };
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            ["fixed", ms] => Ok(LatencyModel::Fixed {
                ms: num(ms, "milliseconds")?,
            }),
            ["lognormal", mean, sigma] => Ok(LatencyModel::LogNormal {
                mean_ms: num(mean, "mean")?,
                sigma: num(sigma, "sigma")?,
            }),
            ["fixed", ..] | ["lognormal", ..] => Err(bad("wrong number of fields")),
            _ => Err(bad("unknown model")),
        }
    }
}

impl std::fmt::Display for LatencyModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LatencyModel::Fixed { ms } => write!(f, "fixed:{ms}"),
            LatencyModel::LogNormal { mean_ms, sigma } => write!(f, "lognormal:{mean_ms}:{sigma}"),
        }
    }
}

impl LatencyModel {
    /// The simulator's latency setting for this model.
    pub(crate) fn sim_latency(self) -> Latency {
        match self {
            LatencyModel::Fixed { ms } => Latency::from_mean(ms, 0.0),
            LatencyModel::LogNormal { mean_ms, sigma } => Latency::from_mean(mean_ms, sigma),
        }
    }
}

/// The latency of every task's first model call, in ms, in plan order: exactly what the
/// simulator configured by `sim` will take (overrides first, then seeded draws).
pub fn planned_latencies(plan: &ValidatedPlan, sim: &SimConfig) -> Vec<f64> {
    (0..plan.len())
        .map(|i| duration_ms(sim.latency_of(&plan.id(i).to_string(), 1)))
        .collect()
}

/// Checks a latency file's ids against the plan: replaying a file written for another plan
/// would silently fall back to the model for every task.
pub(crate) fn check_latency_ids(
    plan: &ValidatedPlan,
    overrides: &HashMap<String, Duration>,
) -> Vec<String> {
    let mut unknown: Vec<String> = overrides
        .keys()
        .filter(|id| plan.index_of_key(id).is_none())
        .map(|id| format!("task {id} is not in the plan"))
        .collect();
    unknown.sort();
    unknown
}

fn duration_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_latency_models_and_names_bad_ones() {
        assert_eq!(
            "fixed:5".parse::<LatencyModel>(),
            Ok(LatencyModel::Fixed { ms: 5.0 })
        );
        assert_eq!(
            "lognormal:100:1.0".parse::<LatencyModel>(),
            Ok(LatencyModel::LogNormal {
                mean_ms: 100.0,
                sigma: 1.0
            })
        );
        assert_eq!(
            "fixed:-1".parse::<LatencyModel>().unwrap_err().to_string(),
            "latency \"fixed:-1\": milliseconds \"-1\" is not a non-negative number (expected fixed:MS or lognormal:MEAN_MS:SIGMA)"
        );
        assert_eq!(
            "lognormal:100".parse::<LatencyModel>().unwrap_err().problem,
            "wrong number of fields"
        );
        assert_eq!(
            "uniform:1".parse::<LatencyModel>().unwrap_err().problem,
            "unknown model"
        );
    }

    #[test]
    fn planned_latencies_follow_overrides_then_the_model() {
        let plan = ValidatedPlan::new(gen_plan::chain(3)).expect("valid");
        let sim = SimConfig {
            latency: LatencyModel::Fixed { ms: 7.0 }.sim_latency(),
            latency_overrides: [("2".to_owned(), Duration::from_millis(40))].into(),
            ..SimConfig::default()
        };
        assert_eq!(planned_latencies(&plan, &sim), vec![7.0, 40.0, 7.0]);
        assert!(check_latency_ids(&plan, &sim.latency_overrides).is_empty());
        let stray = [("9".to_owned(), Duration::ZERO)].into();
        assert_eq!(
            check_latency_ids(&plan, &stray),
            vec!["task 9 is not in the plan"]
        );
    }
}
