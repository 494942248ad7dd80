//! Whether the subagent prompt's compiled form matters at a realistic latency: the same
//! 10,000-task wide plan at lognormal latency (mean 1 s, σ 0.5), rendered by the compiled
//! steps (the built-in templates) and by minijinja (the same template, overridden with a
//! comment in front, which the compiled form declines), in interleaved rounds. Printed per
//! run: the makespan, the critical path it cannot beat (the longest latency drawn), and the
//! process's CPU time; then the same at zero latency, where CPU time is all there is.
//!
//! `cargo bench -p planwave-loadtest --bench prompt_renderers` (`ROUNDS=3` by default).
//! The compiled form was removed after this measurement (issue 32); since then both sets
//! render through minijinja, and the figures of docs/benchmarks.md come from commit 08879de.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use planwave_engine::{PromptSet, RunRequest, execute};
use planwave_plan::{ValidatedPlan, generate};
use planwave_prompts::Templates;
use planwave_sim::{Latency, SimConfig, SimProvider};

#[global_allocator]
static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;

/// User and system CPU time of this process so far, in seconds.
fn cpu_secs() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Makespan and CPU seconds of one run.
async fn run(
    plan: &Arc<ValidatedPlan>,
    prompts: &Arc<dyn PromptSet>,
    sim: &SimConfig,
) -> (f64, f64) {
    let cpu = cpu_secs();
    let start = Instant::now();
    let result = execute(RunRequest {
        prompts: prompts.clone(),
        ..RunRequest::in_memory(plan.clone(), Arc::new(SimProvider::new(sim.clone())))
    })
    .await
    .expect("ran");
    let makespan = start.elapsed().as_secs_f64();
    assert_eq!(result.stats.completed, plan.len());
    (makespan, cpu_secs() - cpu)
}

/// The built-in templates with `subagent.j2` overridden by itself behind a comment.
fn minijinja_only(dir: &Path) -> Templates {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../prompts");
    for lang in ["en", "zh"] {
        let text = std::fs::read_to_string(root.join(lang).join("subagent.j2")).expect("template");
        std::fs::create_dir_all(dir.join(lang)).expect("dir");
        std::fs::write(
            dir.join(lang).join("subagent.j2"),
            format!("{{# rendered by minijinja #}}{text}"),
        )
        .expect("override");
    }
    Templates::load(Some(dir)).expect("templates")
}

fn main() {
    planwave_alloc::configure();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let sets: [(&str, Arc<dyn PromptSet>); 2] = [
        ("builtin", Arc::new(Templates::builtin())),
        ("minijinja", Arc::new(minijinja_only(dir.path()))),
    ];
    let plan = Arc::new(ValidatedPlan::new(generate::wide(10_000)).expect("valid"));
    let slow = SimConfig {
        latency: Latency::from_mean(1000.0, 0.5),
        ..SimConfig::default()
    };
    let critical_ms = (0..plan.len())
        .map(|i| slow.latency_of(&plan.id(i).to_string(), 1).as_secs_f64() * 1000.0)
        .fold(0.0, f64::max);
    let instant = SimConfig::default();
    for round in 1..=rounds {
        for (name, prompts) in &sets {
            let (makespan, cpu) = rt.block_on(run(&plan, prompts, &slow));
            println!(
                "round {round} {name} lognormal:1000:0.5: makespan {:.1} ms = {:.4}x the \
                 critical path {critical_ms:.1} ms, cpu {:.0} ms ({:.1} us/task)",
                makespan * 1000.0,
                makespan * 1000.0 / critical_ms,
                cpu * 1000.0,
                cpu * 1e6 / plan.len() as f64
            );
        }
        for (name, prompts) in &sets {
            let (makespan, cpu) = rt.block_on(run(&plan, prompts, &instant));
            println!(
                "round {round} {name} zero latency: makespan {:.1} ms, cpu {:.0} ms ({:.1} us/task)",
                makespan * 1000.0,
                cpu * 1000.0,
                cpu * 1e6 / plan.len() as f64
            );
        }
    }
}
