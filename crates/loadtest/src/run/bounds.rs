//! Lower bounds on a workload's makespan, from a latency per task.

use planwave_plan::ValidatedPlan;
use serde::Serialize;

/// No schedule can finish before its longest chain of latencies is done; the wave barrier
/// cannot finish before the slowest task of every wave, one wave after another.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Bounds {
    pub(crate) critical_path_ms: f64,
    pub(crate) wave_barrier_ms: f64,
}

impl Bounds {
    pub(crate) fn of(plan: &ValidatedPlan, latency_ms: &[f64]) -> Bounds {
        Bounds {
            critical_path_ms: critical_path_bound(plan, latency_ms),
            wave_barrier_ms: wave_barrier_bound(plan, latency_ms),
        }
    }
}

/// The sum of latencies along the longest (by latency) dependency chain.
pub(crate) fn critical_path_bound(plan: &ValidatedPlan, latency_ms: &[f64]) -> f64 {
    plan.critical_path_weighted(latency_ms).0
}

/// The sum over waves of the slowest latency in the wave.
pub(crate) fn wave_barrier_bound(plan: &ValidatedPlan, latency_ms: &[f64]) -> f64 {
    plan.waves()
        .iter()
        .map(|w| {
            w.iter()
                .map(|&i| latency_ms[i as usize])
                .fold(0.0, f64::max)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_plan::{PlanSpec, TaskId, TaskSpec};

    fn diamond() -> ValidatedPlan {
        // 1 -> {2, 3} -> 4
        let t = |k: i64, deps: &[i64]| {
            TaskSpec::new(
                TaskId::Int(k),
                format!("task {k}"),
                deps.iter().map(|&d| TaskId::Int(d)).collect(),
            )
        };
        ValidatedPlan::new(PlanSpec {
            topic: "diamond".into(),
            tasks: vec![t(1, &[]), t(2, &[1]), t(3, &[1]), t(4, &[3])],
            ..PlanSpec::default()
        })
        .expect("valid")
    }

    #[test]
    fn bounds_of_a_diamond() {
        let plan = diamond();
        // The slow task 2 is on no chain to 4, so the barrier pays for it and dataflow does not.
        let lat = [10.0, 50.0, 5.0, 1.0];
        let b = Bounds::of(&plan, &lat);
        assert_eq!(b.critical_path_ms, 60.0);
        assert_eq!(b.wave_barrier_ms, 61.0);
    }
}
