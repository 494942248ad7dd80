//! Executor throughput: a 10,000-task wide plan through supervisor, subagent actors and
//! integrator, with the simulated LLM at zero latency and no files written.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use planwave_engine::{RunRequest, execute};
use planwave_plan::{ValidatedPlan, generate};
use planwave_sim::{SimConfig, SimProvider};

fn run_once(rt: &tokio::runtime::Runtime, plan: &Arc<ValidatedPlan>) {
    let result = rt.block_on(execute(RunRequest::in_memory(
        plan.clone(),
        Arc::new(SimProvider::new(SimConfig::default())),
    )));
    match result {
        Ok(r) => assert_eq!(r.stats.completed, plan.len()),
        Err(e) => panic!("run failed: {e}"),
    }
}

fn executor(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("executor");
    group.sample_size(10);
    for (name, spec) in [
        ("wide_10000", generate::wide(10_000)),
        ("chain_2000", generate::chain(2_000)),
        ("random_10000_fanin4", generate::random(10_000, 4, 1)),
    ] {
        let plan = Arc::new(ValidatedPlan::new(spec).expect("valid generated plan"));
        group.throughput(Throughput::Elements(plan.len() as u64));
        group.bench_function(name, |b| b.iter(|| run_once(&rt, &plan)));
    }
    group.finish();
}

criterion_group!(benches, executor);
criterion_main!(benches);
