//! Plan-crate hot paths: a large model-written plan from bytes to waves, and deep chains.
//!
//! Run with `cargo bench -p planwave-plan -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use planwave_plan::{ValidatedPlan, generate, parse_plan};

fn random_dag(c: &mut Criterion) {
    let text =
        serde_json::to_vec(&generate::random(20_000, 4, 1)).expect("synthetic plans serialize");
    c.bench_function("random_20k_fanin4/parse", |b| {
        b.iter(|| parse_plan(black_box(&text)).expect("synthetic plans parse"))
    });
    c.bench_function("random_20k_fanin4/parse+validate+waves", |b| {
        b.iter(|| {
            let spec = parse_plan(black_box(&text)).expect("synthetic plans parse");
            let plan = ValidatedPlan::new(spec).expect("synthetic plans are valid");
            black_box(plan.waves().len())
        })
    });
}

fn chain(c: &mut Criterion) {
    let spec = generate::chain(100_000);
    let text = serde_json::to_vec(&spec).expect("synthetic plans serialize");
    c.bench_function("chain_100k/parse+validate+waves", |b| {
        b.iter(|| {
            let spec = parse_plan(black_box(&text)).expect("synthetic plans parse");
            let plan = ValidatedPlan::new(spec).expect("chains are valid");
            black_box(plan.waves().len())
        })
    });
    c.bench_function("chain_100k/validate", |b| {
        // The clone is setup, not measured: validation consumes its spec.
        b.iter_batched(
            || spec.clone(),
            |spec| ValidatedPlan::new(spec).expect("chains are valid"),
            BatchSize::LargeInput,
        )
    });
}

criterion_group!(benches, random_dag, chain);
criterion_main!(benches);
