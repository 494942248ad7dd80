//! Memory per in-flight subagent (issue 32: at most 10 KB with 100,000 in flight) through
//! `planwave_loadtest::run`, the in-process path of `planwave loadtest --shape wide`, built
//! without the binary's other crates: a quick A/B of the per-subagent memory between two
//! builds of the engine, the simulator or the load tester.
//!
//!     cargo build --release -p planwave-loadtest --bench in_flight_memory
//!     target/release/deps/in_flight_memory-*     # TASKS=100000 LATENCY_MS=2000 by default
//!
//! The figure is the run's (peak − baseline) RSS over the most calls in flight, as the load
//! tester reports it; run each measurement in a fresh process (a heap grown by an earlier run
//! would hide a later one's growth). On a loaded machine give a latency long enough for every
//! task to start before the first ends (`max_in_flight` equal to `TASKS`). The figure of
//! record is `planwave loadtest --shape wide --tasks 100000 --latency fixed:2000 --json`
//! (`docs/bench/section1.sh`), which also carries the binary's tracing subscriber.

use std::sync::Arc;
use std::time::Duration;

use planwave_engine::RunRequest;
use planwave_loadtest::{LoadRequest, planned_latencies, run};
use planwave_plan::{ValidatedPlan, generate};
use planwave_sim::{Latency, SimConfig, SimProvider};

#[global_allocator]
static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    planwave_alloc::configure();
    let tasks = env_u64("TASKS", 100_000) as usize;
    let latency = Duration::from_millis(env_u64("LATENCY_MS", 2_000));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let plan = Arc::new(ValidatedPlan::new(generate::wide(tasks)).expect("valid plan"));
    let sim = SimConfig {
        latency: Latency::Fixed(latency),
        ..SimConfig::default()
    };
    let planned = planned_latencies(&plan, &sim);
    let report = runtime
        .block_on(run(LoadRequest {
            run: RunRequest::in_memory(plan, Arc::new(SimProvider::new(sim))),
            planned_ms: Some(planned),
            timeline: false,
            on_start: None,
            arrivals: None,
            serving: None,
            local_integrator: false,
            shaping: None,
            live_latencies: false,
        }))
        .expect("load test ran");
    println!(
        "tasks {tasks} latency_ms {} max_in_flight {} peak_rss_bytes {:?} baseline_rss_bytes {:?} \
         rss_per_in_flight_bytes {:?} makespan_ms {:.0}",
        latency.as_millis(),
        report.max_in_flight,
        report.peak_rss_bytes,
        report.baseline_rss_bytes,
        report.rss_per_in_flight_bytes,
        report.makespan_ms,
    );
}
