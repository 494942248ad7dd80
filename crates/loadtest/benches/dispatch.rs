//! Dispatch throughput as users get it: a 10,000-task wide plan at zero latency through
//! supervisor, subagent actors and integrator, with the real prompt templates, with and
//! without the durable journal (`events.jsonl`, group-committed with fsync, as `run` does).
//!
//! Run with `cargo bench -p planwave-loadtest --bench dispatch -- --warm-up-time 1 --measurement-time 5`.

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use planwave_engine::{PromptSet, RunRequest, execute};
use planwave_plan::{ValidatedPlan, generate};
use planwave_prompts::Templates;
use planwave_sim::{SimConfig, SimProvider};
use planwave_storage::Journal;

// The allocator the `planwave` binary uses, so the figures are the ones users get.
#[global_allocator]
static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;

fn run_once(
    rt: &tokio::runtime::Runtime,
    plan: &Arc<ValidatedPlan>,
    prompts: &Arc<dyn PromptSet>,
    journal: Option<Arc<Journal>>,
) {
    let result = rt.block_on(execute(RunRequest {
        prompts: prompts.clone(),
        journal,
        ..RunRequest::in_memory(
            plan.clone(),
            Arc::new(SimProvider::new(SimConfig::default())),
        )
    }));
    match result {
        Ok(r) => assert_eq!(r.stats.completed, plan.len()),
        Err(e) => panic!("run failed: {e}"),
    }
}

fn dispatch(c: &mut Criterion) {
    planwave_alloc::configure();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let plan = Arc::new(ValidatedPlan::new(generate::wide(10_000)).expect("valid"));
    let prompts: Arc<dyn PromptSet> = Arc::new(Templates::builtin());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("dispatch_wide_10000");
    group.sample_size(10);
    group.throughput(Throughput::Elements(plan.len() as u64));
    group.bench_function("journal_off", |b| {
        b.iter(|| run_once(&rt, &plan, &prompts, None))
    });
    let mut n = 0u32;
    group.bench_function("journal_on", |b| {
        b.iter(|| {
            n += 1;
            let path = dir.path().join(format!("events-{n}.jsonl"));
            let journal = Arc::new(Journal::open(&path, true).expect("journal"));
            run_once(&rt, &plan, &prompts, Some(journal.clone()));
            journal.close().expect("journal written");
        })
    });
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
