//! One point's workload: its plan (generated, given, N requests, or copies started at a
//! rate), who answers it, and what latency each task is planned to take.

use std::sync::Arc;

use planwave_llm::LlmProvider;
use planwave_plan::{PlanSpec, ValidatedPlan};
use planwave_sim::{Latency, SimConfig, SimProvider};

use super::{DEFAULT_LATENCY, Endpoint, PlanChoice, SweepError, SweepOptions};
use crate::endpoint::io_threads::IoThreads;
use crate::traffic::Point;
use crate::workload::arrivals::replicate;
use crate::workload::{Shape, check_latency_ids, generate, planned_latencies};

/// A point's plan and who answers it.
pub(crate) struct Workload {
    pub plan: Arc<ValidatedPlan>,
    pub provider: Arc<dyn LlmProvider>,
    /// Each task's planned latency in ms, when known before the run.
    pub planned: Option<Vec<f64>>,
    pub model_label: String,
}

fn validated<E>(spec: PlanSpec, what: &'static str) -> Result<ValidatedPlan, SweepError<E>> {
    ValidatedPlan::new(spec).map_err(|e| SweepError::Plan {
        what,
        problems: e.0.iter().map(|p| p.to_string()).collect(),
    })
}

/// The plan run at `point`, and how the output names it.
pub(crate) fn point_plan<E>(
    o: &SweepOptions<E>,
    point: &Point,
) -> Result<(Arc<ValidatedPlan>, String), SweepError<E>> {
    if let Some(n) = o.traffic.request_count(point) {
        let plan = validated(generate(Shape::Wide, n, 0, None, o.seed), "generated plan")?;
        return Ok((Arc::new(plan), format!("{n} independent requests")));
    }
    let (plan, source) = base_plan(o)?;
    if o.traffic.plan_rate.is_some() {
        let copies = o.traffic.plan_count();
        let plan = validated(replicate(plan.spec(), copies), "replicated plan")?;
        return Ok((Arc::new(plan), format!("{copies} plans of {source}")));
    }
    Ok((plan, source))
}

fn base_plan<E>(o: &SweepOptions<E>) -> Result<(Arc<ValidatedPlan>, String), SweepError<E>> {
    let (shape, tasks, fan_in, width) = match &o.plan {
        PlanChoice::Given { plan, name } => return Ok((plan.clone(), format!("plan {name}"))),
        PlanChoice::Generated {
            shape,
            tasks,
            fan_in,
            width,
        } => (*shape, *tasks, *fan_in, *width),
    };
    let plan = validated(
        generate(shape, tasks, fan_in, width, o.seed),
        "generated plan",
    )?;
    let fan_in = match shape {
        Shape::Random | Shape::Layered => format!(", fan-in {fan_in}"),
        _ => String::new(),
    };
    Ok((
        Arc::new(plan),
        format!("{} (seed {}{fan_in})", shape.as_str(), o.seed),
    ))
}

impl Workload {
    pub(crate) fn new<E>(
        o: &SweepOptions<E>,
        plan: Arc<ValidatedPlan>,
    ) -> Result<Workload, SweepError<E>> {
        let overrides = match &o.latency_file {
            Some(file) => {
                let unknown = check_latency_ids(&plan, &file.latencies);
                if !unknown.is_empty() {
                    return Err(SweepError::LatencyFileIds {
                        path: file.path.clone(),
                        problems: unknown,
                    });
                }
                file.latencies.clone()
            }
            None => Default::default(),
        };
        let sim = SimConfig {
            seed: o.seed,
            latency: o.latency.unwrap_or(DEFAULT_LATENCY).sim_latency(),
            latency_overrides: overrides,
            ..SimConfig::default()
        };
        let w = match &o.endpoint {
            Endpoint::Simulator => Workload {
                provider: Arc::new(SimProvider::new(sim.clone())),
                planned: Some(planned_latencies(&plan, &sim)),
                model_label: "in-process simulator".into(),
                plan,
            },
            Endpoint::Http { url, connect } => {
                if o.latency.is_some() {
                    return Err(SweepError::LatencyWithEndpoint);
                }
                // Only a replayed file says what the server will take; else measure.
                let planned = o.latency_file.as_ref().map(|_| {
                    let only_file = SimConfig {
                        latency: Latency::Zero,
                        ..sim.clone()
                    };
                    planned_latencies(&plan, &only_file)
                });
                Workload {
                    provider: IoThreads::wrap(connect.as_ref()).map_err(SweepError::Connect)?,
                    planned,
                    // Shown on the terminal and in the JSON and HTML reports.
                    model_label: planwave_redact::redact_url(url).into_owned(),
                    plan,
                }
            }
        };
        if let Some(path) = &o.save_latencies {
            w.save_latencies(path)?;
        }
        Ok(w)
    }

    /// The planned latency per task id, as a JSON map a latency file replays.
    fn save_latencies<E>(&self, path: &std::path::Path) -> Result<(), SweepError<E>> {
        let planned = self.planned.as_ref().ok_or(SweepError::LatenciesUnknown)?;
        let map: serde_json::Map<String, serde_json::Value> = (0..self.plan.len())
            .map(|i| (self.plan.id(i).to_string(), planned[i].into()))
            .collect();
        let text = serde_json::to_vec_pretty(&map)
            .map_err(|e| SweepError::io("writing", path, e.into()))?;
        std::fs::write(path, text).map_err(|e| SweepError::io("writing", path, e))
    }
}
