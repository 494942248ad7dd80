//! Arrival processes for open-loop runs: when each request (or each whole plan) is sent,
//! independent of when earlier ones finish.

use std::time::Duration;

use planwave_plan::{PlanSpec, TaskId, TaskSpec, ValidatedPlan};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Gamma};

/// `n` arrival times at `rate` per second, from 0: gamma-distributed gaps of shape
/// `burstiness` and mean `1 / rate` (burstiness 1 is a Poisson process; below 1 burstier,
/// above 1 more regular), as vLLM's `benchmark_serving` draws them. The first is at 0.
pub(crate) fn gamma_arrivals(n: usize, rate: f64, burstiness: f64, seed: u64) -> Vec<Duration> {
    let mut rng = StdRng::seed_from_u64(seed);
    let shape = if burstiness.is_finite() && burstiness > 0.0 {
        burstiness
    } else {
        1.0
    };
    let gap = Gamma::new(shape, 1.0 / (rate.max(f64::MIN_POSITIVE) * shape)).ok();
    let mut t = 0.0f64;
    (0..n)
        .map(|k| {
            if k > 0 {
                t += gap.as_ref().map_or(1.0 / rate, |g| g.sample(&mut rng));
            }
            Duration::from_secs_f64(t)
        })
        .collect()
}

/// `copies` disjoint copies of `spec` in one plan (ids `p<copy>.<id>`), so whole plans can
/// be started at a rate while each runs by its own dataflow.
pub(crate) fn replicate(spec: &PlanSpec, copies: usize) -> PlanSpec {
    let rename = |c: usize, id: &TaskId| TaskId::Str(format!("p{c}.{}", id.key()));
    let tasks = (0..copies)
        .flat_map(|c| {
            spec.tasks.iter().map(move |t| TaskSpec {
                id: rename(c, &t.id),
                dependencies: t.dependencies.iter().map(|d| rename(c, d)).collect(),
                ..t.clone()
            })
        })
        .collect();
    PlanSpec {
        tasks,
        topic: format!("{copies} copies of: {}", spec.topic),
        ..spec.clone()
    }
}

/// Per task of a replicated plan, its copy's arrival: every task of copy `c` may send no
/// earlier than `plan_arrivals[c]` (only the copy's first tasks are really held: the rest
/// wait for their prerequisites anyway).
pub(crate) fn per_copy(plan: &ValidatedPlan, plan_arrivals: &[Duration]) -> Vec<Duration> {
    (0..plan.len())
        .map(|i| {
            let key = plan.id(i).to_string();
            key.strip_prefix('p')
                .and_then(|r| r.split_once('.'))
                .and_then(|(c, _)| c.parse::<usize>().ok())
                .and_then(|c| plan_arrivals.get(c).copied())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_arrivals_have_the_asked_count_and_mean_rate() {
        let a = gamma_arrivals(20_000, 100.0, 1.0, 7);
        assert_eq!(a.len(), 20_000);
        assert_eq!(a[0], Duration::ZERO);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        let mean_rate = (a.len() - 1) as f64 / a.last().unwrap().as_secs_f64();
        assert!((mean_rate - 100.0).abs() < 3.0, "{mean_rate}");
        assert_eq!(a, gamma_arrivals(20_000, 100.0, 1.0, 7), "seeded");
    }

    #[test]
    fn lower_burstiness_gives_more_variable_gaps() {
        let cv = |b: f64| {
            let a = gamma_arrivals(20_000, 50.0, b, 3);
            let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
            var.sqrt() / mean
        };
        // The coefficient of variation of gamma gaps is 1 / sqrt(shape).
        assert!((cv(1.0) - 1.0).abs() < 0.05);
        assert!((cv(0.25) - 2.0).abs() < 0.15);
        assert!(cv(4.0) < 0.6);
    }

    #[test]
    fn replicated_plans_keep_their_shape_and_get_their_copys_arrival() {
        let spec = planwave_plan::generate::chain(3);
        let plan = ValidatedPlan::new(replicate(&spec, 2)).expect("valid");
        assert_eq!(plan.len(), 6);
        assert_eq!(plan.waves().len(), 3);
        let at = [Duration::ZERO, Duration::from_millis(50)];
        let per = per_copy(&plan, &at);
        for (i, got) in per.iter().enumerate() {
            let copy = plan.id(i).to_string().starts_with("p1.");
            assert_eq!(*got, at[usize::from(copy)]);
        }
    }
}
