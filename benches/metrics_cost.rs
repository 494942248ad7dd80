//! What the fleet's metrics cost the engine (issue 39: under 2 % slower): `execute` at zero
//! latency on a wide plan, with metrics off (events built and dropped, the bare simulator)
//! and on (every event teed into the Prometheus series by `MeteredSink`, the model client
//! wrapped by `MeteredProvider`, as `planwave serve` and `planwave worker` run jobs), in
//! interleaved rounds of one process (off, on, then on, off), medians printed at the end.
//!
//! Off is an enabled sink that drops what it hears, not the engine's `NullSink`: a run of
//! `serve` or `worker` always journals its events, so they are built with metrics or without;
//! what metrics add is the tee (which counts each event as it is emitted) and the provider
//! wrapper.
//!
//! `cargo bench --bench metrics_cost` (`ROUNDS=15`, `WIDE=10000` by default): each run is
//! `execute` from the call to the report, when every event is counted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use planwave_engine::{PromptSet, RunRequest, execute};
use planwave_llm::LlmProvider;
use planwave_plan::{ValidatedPlan, generate};
use planwave_prompts::Templates;
use planwave_record::{Event, EventSink, NullSink};
use planwave_serve::metrics::{MeteredProvider, MeteredSink, Metrics};
use planwave_sim::{Latency, SimConfig, SimProvider};

/// The events a journal would be given, dropped (see the module's note).
struct Dropped;

impl EventSink for Dropped {
    fn emit(&self, _event: &Event) {}
}

// The allocator the `planwave` binary uses.
#[global_allocator]
static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;

/// One run: its time to the report (every event counted by then).
async fn once(plan: &Arc<ValidatedPlan>, prompts: &Arc<dyn PromptSet>, metered: bool) -> Duration {
    let sim: Arc<dyn LlmProvider> = Arc::new(SimProvider::new(SimConfig {
        latency: Latency::from_mean(0.0, 0.0),
        ..SimConfig::default()
    }));
    let metrics = metered.then(Metrics::new);
    let (provider, sink): (Arc<dyn LlmProvider>, Arc<dyn EventSink>) = match &metrics {
        Some(m) => (
            MeteredProvider::wrap(sim, m.clone()),
            Arc::new(MeteredSink::new(Arc::new(NullSink), m.clone(), None)),
        ),
        None => (sim, Arc::new(Dropped)),
    };
    let start = Instant::now();
    let result = execute(RunRequest {
        prompts: prompts.clone(),
        sink,
        ..RunRequest::in_memory(plan.clone(), provider)
    })
    .await
    .expect("ran");
    let run = start.elapsed();
    assert_eq!(result.stats.completed, plan.len());
    if let Some(m) = &metrics {
        let text = m.encode();
        let completed = format!(
            "planwave_tasks_total{{outcome=\"completed\"}} {}\n",
            plan.len()
        );
        assert!(text.contains(&completed), "every task counted:\n{text}");
    }
    run
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(default)
}

fn main() {
    planwave_alloc::configure();
    let rounds = env_usize("ROUNDS", 15);
    let wide = env_usize("WIDE", 10_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let prompts: Arc<dyn PromptSet> = Arc::new(Templates::builtin());
    let plan = Arc::new(ValidatedPlan::new(generate::wide(wide)).expect("valid"));
    // `ONLY=on|off`: that side alone, `ROUNDS` times after one warm-up, nothing printed but
    // the count: for callgrind, whose instruction counts do not depend on the machine's load.
    if let Ok(only) = std::env::var("ONLY") {
        let metered = only == "on";
        for _ in 0..=rounds {
            rt.block_on(once(&plan, &prompts, metered));
        }
        println!("ONLY={only}: {} runs of wide {wide}", rounds + 1);
        return;
    }
    // Warm-up: one of each, not counted.
    rt.block_on(once(&plan, &prompts, false));
    rt.block_on(once(&plan, &prompts, true));
    let mut ratios = Vec::new();
    let (mut offs, mut ons) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        // Alternate which goes first, so neither always runs on a warmer heap.
        let order = if round % 2 == 1 {
            [false, true]
        } else {
            [true, false]
        };
        let (mut off, mut on) = (Duration::ZERO, Duration::ZERO);
        for metered in order {
            let t = rt.block_on(once(&plan, &prompts, metered));
            if metered { on = t } else { off = t }
        }
        let ratio = on.as_secs_f64() / off.as_secs_f64();
        println!(
            "round {round} wide {wide}: off {:.1} ms, on {:.1} ms: on/off {ratio:.3}",
            off.as_secs_f64() * 1e3,
            on.as_secs_f64() * 1e3,
        );
        ratios.push(ratio);
        offs.push(off.as_secs_f64() * 1e3);
        ons.push(on.as_secs_f64() * 1e3);
    }
    println!(
        "median of {rounds} rounds, wide {wide}: off {:.1} ms, on {:.1} ms; on/off {:.3} \
         (range {:.3}-{:.3})",
        median(offs),
        median(ons),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
}
