//! Synthetic plans for tests, benchmarks and load tests.
//!
//! Deterministic for a seed (a seeded [`StdRng`]); ids are integers 1..=n in declaration
//! order and every dependency points to an earlier task, so every plan here is a valid DAG.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::model::{PlanSpec, TaskId, TaskSpec};

/// `n` independent tasks.
pub fn wide(n: usize) -> PlanSpec {
    plan(
        format!("Synthetic wide plan ({n} tasks)"),
        format!("Run {n} independent tasks at once"),
        (1..=n).map(|k| task(k, Vec::new())),
    )
}

/// `n` tasks, each depending on the previous one.
pub fn chain(n: usize) -> PlanSpec {
    plan(
        format!("Synthetic chain plan ({n} tasks)"),
        format!("Run {n} tasks one after another"),
        (1..=n).map(|k| task(k, if k > 1 { vec![k - 1] } else { Vec::new() })),
    )
}

/// `n` tasks in layers of `width`; each task depends on up to `fan_in` tasks of the layer before.
///
/// Every task past the first layer depends on between 1 and `fan_in` distinct tasks of the
/// previous layer (fewer if that layer is smaller); `fan_in == 0` gives no dependencies.
/// A `width` of 0 is taken as 1.
pub fn layered(n: usize, width: usize, fan_in: usize, seed: u64) -> PlanSpec {
    let width = width.max(1);
    let mut rng = StdRng::seed_from_u64(seed);
    let tasks = (1..=n).map(|k| {
        let layer = (k - 1) / width;
        if layer == 0 || fan_in == 0 {
            return task(k, Vec::new());
        }
        // The previous layer is always full: only the last layer can be short.
        let prev_first = (layer - 1) * width + 1;
        let count = rng.random_range(1..=fan_in.min(width));
        task(k, pick(&mut rng, prev_first, width, count))
    });
    plan(
        format!("Synthetic layered plan ({n} tasks)"),
        format!("Run {n} tasks in layers of {width} with fan-in up to {fan_in}"),
        tasks.collect::<Vec<_>>(),
    )
}

/// A random DAG of `n` tasks; each task depends on up to `fan_in` earlier tasks.
///
/// Task k depends on 0..=`fan_in` distinct tasks drawn uniformly from a window of the
/// `4 * sqrt(n)` tasks just before it. Drawing from the whole prefix would make nearly every
/// task depend on early ones and give a shallow graph; a window keeps the depth moderate
/// (a few dozen waves for 20,000 tasks), more like a real plan's long dependency chains.
pub fn random(n: usize, fan_in: usize, seed: u64) -> PlanSpec {
    let window = ((n as f64).sqrt() * 4.0).ceil().max(1.0) as usize;
    let mut rng = StdRng::seed_from_u64(seed);
    let tasks = (1..=n).map(|k| {
        let available = (k - 1).min(window);
        let count = rng.random_range(0..=fan_in.min(available));
        task(k, pick(&mut rng, k - available, available, count))
    });
    plan(
        format!("Synthetic random plan ({n} tasks)"),
        format!("Run {n} tasks with random dependencies (fan-in up to {fan_in})"),
        tasks.collect::<Vec<_>>(),
    )
}

/// `count` distinct ids from `first..first + len`, ascending.
fn pick(rng: &mut StdRng, first: usize, len: usize, count: usize) -> Vec<usize> {
    if count == 0 || len == 0 {
        return Vec::new();
    }
    let mut chosen: Vec<usize> = rand::seq::index::sample(rng, len, count.min(len))
        .into_iter()
        .map(|i| first + i)
        .collect();
    chosen.sort_unstable();
    chosen
}

fn task(k: usize, deps: Vec<usize>) -> TaskSpec {
    TaskSpec::new(
        id(k),
        format!("Synthetic task {k}"),
        deps.into_iter().map(id).collect(),
    )
}

fn id(k: usize) -> TaskId {
    // Synthetic plans are far smaller than i64::MAX tasks.
    TaskId::Int(k as i64)
}

fn plan(topic: String, objective: String, tasks: impl IntoIterator<Item = TaskSpec>) -> PlanSpec {
    PlanSpec {
        research_type: None,
        topic,
        objectives: vec![objective],
        tasks: tasks.into_iter().collect(),
        ..PlanSpec::default()
    }
}
