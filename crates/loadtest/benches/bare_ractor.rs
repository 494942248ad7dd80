//! The engine at zero latency against a bare ractor baseline written for the purpose: a
//! supervisor that spawns one actor per task and receives one message back, nothing else
//! (no plan, no records, no prompt, no report). The engine's bookkeeping is what separates
//! the two; issue 32 asks that it cost no more than the bare spawn and message (the engine
//! at ≥ 0.5× the baseline's tasks/s).
//!
//! One process, interleaved rounds (bare, bare linked, engine; wide 10,000 then chain
//! 5,000), medians printed at the end:
//! `cargo bench -p planwave-loadtest --bench bare_ractor` (`ROUNDS=5` by default).
//! "bare linked" spawns its actors linked to the supervisor, as the engine does, and so also
//! pays for ractor's two supervision events per actor; it is printed for reference.

use std::sync::Arc;
use std::time::Instant;

use planwave_engine::{PromptSet, RunRequest, execute};
use planwave_plan::{ValidatedPlan, generate};
use planwave_prompts::Templates;
use planwave_sim::{Latency, SimConfig, SimProvider};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;

// The allocator the `planwave` binary uses, for both sides.
#[global_allocator]
static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Wide,
    Chain,
}

/// The baseline's supervisor.
struct Boss;

/// A worker's one message: it is done.
struct Done;

struct BossArgs {
    shape: Shape,
    tasks: usize,
    linked: bool,
    done: oneshot::Sender<()>,
}

struct BossState {
    args: BossArgs,
    finished: usize,
    done: Option<oneshot::Sender<()>>,
}

/// The baseline's per-task actor: tells the supervisor it is done, and stops.
struct Worker;

impl Actor for Worker {
    type Msg = ();
    type State = ActorRef<Done>;
    type Arguments = ActorRef<Done>;

    async fn pre_start(
        &self,
        _myself: ActorRef<()>,
        boss: ActorRef<Done>,
    ) -> Result<ActorRef<Done>, ActorProcessingErr> {
        Ok(boss)
    }

    /// On its own task, as a subagent reports from its own.
    async fn post_start(
        &self,
        myself: ActorRef<()>,
        boss: &mut ActorRef<Done>,
    ) -> Result<(), ActorProcessingErr> {
        let _ = boss.send_message(Done);
        myself.stop(None);
        Ok(())
    }
}

impl Boss {
    async fn spawn_one(myself: &ActorRef<Done>, linked: bool) {
        let spawned = if linked {
            Actor::spawn_linked(None, Worker, myself.clone(), myself.get_cell()).await
        } else {
            Actor::spawn(None, Worker, myself.clone()).await
        };
        spawned.expect("worker spawned");
    }
}

impl Actor for Boss {
    type Msg = Done;
    type State = BossState;
    type Arguments = BossArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Done>,
        mut args: BossArgs,
    ) -> Result<BossState, ActorProcessingErr> {
        let (unused, _) = oneshot::channel();
        let done = Some(std::mem::replace(&mut args.done, unused));
        Ok(BossState {
            args,
            finished: 0,
            done,
        })
    }

    async fn post_start(
        &self,
        myself: ActorRef<Done>,
        state: &mut BossState,
    ) -> Result<(), ActorProcessingErr> {
        let first = match state.args.shape {
            Shape::Wide => state.args.tasks,
            Shape::Chain => 1,
        };
        for _ in 0..first {
            Boss::spawn_one(&myself, state.args.linked).await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Done>,
        _msg: Done,
        state: &mut BossState,
    ) -> Result<(), ActorProcessingErr> {
        state.finished += 1;
        if state.finished == state.args.tasks {
            if let Some(done) = state.done.take() {
                let _ = done.send(());
            }
            myself.stop(None);
        } else if state.args.shape == Shape::Chain {
            Boss::spawn_one(&myself, state.args.linked).await;
        }
        Ok(())
    }

    /// Linked workers' starts and ends are ignored (by default they would stop the boss).
    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Done>,
        _event: SupervisionEvent,
        _state: &mut BossState,
    ) -> Result<(), ActorProcessingErr> {
        Ok(())
    }
}

/// Tasks per second of the bare baseline.
async fn bare(shape: Shape, tasks: usize, linked: bool) -> f64 {
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let (_boss, join) = Actor::spawn(
        None,
        Boss,
        BossArgs {
            shape,
            tasks,
            linked,
            done: tx,
        },
    )
    .await
    .expect("boss spawned");
    rx.await.expect("all done");
    let secs = start.elapsed().as_secs_f64();
    let _ = join.await;
    tasks as f64 / secs
}

/// Tasks per second of the engine, end to end (the report included), at zero latency.
async fn engine(plan: &Arc<ValidatedPlan>, prompts: &Arc<dyn PromptSet>) -> f64 {
    let provider = SimProvider::new(SimConfig {
        latency: Latency::from_mean(0.0, 0.0),
        ..SimConfig::default()
    });
    let start = Instant::now();
    let result = execute(RunRequest {
        prompts: prompts.clone(),
        ..RunRequest::in_memory(plan.clone(), Arc::new(provider))
    })
    .await
    .expect("ran");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(result.stats.completed, plan.len());
    plan.len() as f64 / secs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    planwave_alloc::configure();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let prompts: Arc<dyn PromptSet> = Arc::new(Templates::builtin());
    let cases = [
        (
            "wide 10000",
            Shape::Wide,
            Arc::new(ValidatedPlan::new(generate::wide(10_000)).expect("valid")),
        ),
        (
            "chain 5000",
            Shape::Chain,
            Arc::new(ValidatedPlan::new(generate::chain(5_000)).expect("valid")),
        ),
    ];
    // Warm-up: one of each, not counted.
    for (_, shape, plan) in &cases {
        rt.block_on(bare(*shape, plan.len(), false));
        rt.block_on(engine(plan, &prompts));
    }
    let mut figures = vec![(Vec::new(), Vec::new(), Vec::new()); cases.len()];
    for round in 1..=rounds {
        for (c, (name, shape, plan)) in cases.iter().enumerate() {
            let b = rt.block_on(bare(*shape, plan.len(), false));
            let l = rt.block_on(bare(*shape, plan.len(), true));
            let e = rt.block_on(engine(plan, &prompts));
            println!(
                "round {round} {name}: bare {b:.0} linked {l:.0} engine {e:.0} tasks/s, \
                 engine/bare {:.2}",
                e / b
            );
            figures[c].0.push(b);
            figures[c].1.push(l);
            figures[c].2.push(e);
        }
    }
    for ((name, _, _), (b, l, e)) in cases.iter().zip(figures) {
        let ratios = b.iter().zip(&e).map(|(b, e)| e / b).collect::<Vec<_>>();
        println!(
            "median {name}: bare {:.0} linked {:.0} engine {:.0} tasks/s; \
             engine/bare median of rounds {:.2} (min {:.2}, max {:.2})",
            median(b),
            median(l),
            median(e.clone()),
            median(ratios.clone()),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
        );
    }
}
