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
//!
//! The engine is measured two ways, both end to end and to its last task settled (the run's
//! makespan: first dispatch to last settle, before the report): with the default simulator
//! (`engine`, a full simulated section per task), and with a provider that answers every
//! task at once with the same short section (`minimal`: 300-odd characters with a figure, so
//! no data-quality warning is raised; the simulator's one-sentence `terse` answers would
//! raise two per task and grow the report), which leaves the engine's own work: the prompt,
//! records, messages and the report.
//!
//! `bare work` is the bare baseline whose actors also do the task's work the engine's
//! subagents do at zero latency, and nothing else: render the same subagent prompt (with the
//! prerequisite's section on a chain, handed on by the supervisor) and ask the same simulator.
//! engine / bare work is the engine's own cost (records, journal-less bookkeeping, the
//! linked spawn, the report) against a spawn, a message and the same work.
//!
//! `WIDE` and `CHAIN` set the sizes (for a profile under callgrind, say `WIDE=1000
//! CHAIN=500 ROUNDS=1`); `ONLY=bare|work|engine|minimal` runs one side alone.

use std::sync::Arc;
use std::time::Instant;

use planwave_engine::{PromptSet, RunRequest, execute};
use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider};
use planwave_plan::{ValidatedPlan, generate};
use planwave_prompts::{PriorSection, TaskText, Templates, subagent_context};
use planwave_record::{ProviderInfo, Usage};
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

/// A worker's one message: it is done (with its section, for `bare work`).
struct Done(Option<Arc<str>>);

/// What a `bare work` actor needs for the task's work: the plan, the prompts, the model.
#[derive(Clone)]
struct Work {
    plan: Arc<ValidatedPlan>,
    prompts: Arc<dyn PromptSet>,
    provider: Arc<dyn LlmProvider>,
}

struct BossArgs {
    shape: Shape,
    tasks: usize,
    linked: bool,
    work: Option<Work>,
    done: oneshot::Sender<()>,
}

struct BossState {
    args: BossArgs,
    finished: usize,
    done: Option<oneshot::Sender<()>>,
}

/// The baseline's per-task actor: (with `work`) renders its prompt and asks the model, tells
/// the supervisor it is done, and stops.
struct Worker;

struct WorkerArgs {
    boss: ActorRef<Done>,
    work: Option<(Work, usize, Option<Arc<str>>)>,
}

impl Actor for Worker {
    type Msg = ();
    type State = WorkerArgs;
    type Arguments = WorkerArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<()>,
        args: WorkerArgs,
    ) -> Result<WorkerArgs, ActorProcessingErr> {
        Ok(args)
    }

    /// On its own task, as a subagent reports from its own.
    async fn post_start(
        &self,
        myself: ActorRef<()>,
        args: &mut WorkerArgs,
    ) -> Result<(), ActorProcessingErr> {
        let section = match args.work.take() {
            Some((work, index, prior)) => Some(task_work(&work, index, prior).await),
            None => None,
        };
        let _ = args.boss.send_message(Done(section));
        myself.stop(None);
        Ok(())
    }
}

/// The work a subagent does at zero latency: the same prompt and context, the same model.
async fn task_work(work: &Work, index: usize, prior: Option<Arc<str>>) -> Arc<str> {
    let plan = &work.plan;
    let task = plan.task(index);
    let text = TaskText::of(task);
    let prior: Vec<PriorSection> = prior
        .map(|text| PriorSection {
            index: index - 1,
            text,
        })
        .into_iter()
        .collect();
    let request = ChatRequest {
        role: AgentRole::Subagent,
        messages: work.prompts.subagent(plan, index, &text, &prior),
        attempt: 1,
        context: subagent_context(plan, index, &text, &prior),
        traceparent: None,
        max_tokens: None,
        tools: Vec::new(),
        on_delta: None,
    };
    let answer = work.provider.chat(request).await.expect("answered");
    Arc::from(answer.content)
}

impl Boss {
    async fn spawn_one(
        myself: &ActorRef<Done>,
        args: &BossArgs,
        index: usize,
        prior: Option<Arc<str>>,
    ) {
        let worker = WorkerArgs {
            boss: myself.clone(),
            work: args.work.clone().map(|w| (w, index, prior)),
        };
        let spawned = if args.linked {
            Actor::spawn_linked(None, Worker, worker, myself.get_cell()).await
        } else {
            Actor::spawn(None, Worker, worker).await
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
        for index in 0..first {
            Boss::spawn_one(&myself, &state.args, index, None).await;
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Done>,
        Done(section): Done,
        state: &mut BossState,
    ) -> Result<(), ActorProcessingErr> {
        state.finished += 1;
        if state.finished == state.args.tasks {
            if let Some(done) = state.done.take() {
                let _ = done.send(());
            }
            myself.stop(None);
        } else if state.args.shape == Shape::Chain {
            Boss::spawn_one(&myself, &state.args, state.finished, section).await;
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

/// Tasks per second of the bare baseline (`work`: with the task's work).
async fn bare(shape: Shape, tasks: usize, linked: bool, work: Option<Work>) -> f64 {
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let (_boss, join) = Actor::spawn(
        None,
        Boss,
        BossArgs {
            shape,
            tasks,
            linked,
            work,
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

/// A model that answers every call at once with the same short section.
struct Minimal;

/// Over the 300-character minimum and with a figure: no data-quality warning.
const MINIMAL_SECTION: &str = "Revenue grew by 12% in 2024, driven by the core product line, \
    while costs rose more slowly than sales. The company kept its margins, paid down part of its \
    debt and invested in two new plants that open next year. Competitors cut prices, but the \
    market share held steady, and the outlook for the coming year is cautiously positive overall.";

#[async_trait::async_trait]
impl LlmProvider for Minimal {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            provider: "minimal".into(),
            model: "minimal".into(),
            simulated: true,
            base_url: None,
            response_format: None,
        }
    }

    async fn chat(&self, _request: ChatRequest) -> Result<ChatResponse, LlmError> {
        Ok(ChatResponse {
            content: MINIMAL_SECTION.to_owned(),
            usage: Usage::default(),
            model: "minimal".into(),
            finish_reason: None,
            tool_calls: Vec::new(),
            timing: None,
        })
    }
}

/// Tasks per second of the engine at zero latency: end to end (the report included), and to
/// the last task settled. `minimal`: the [`Minimal`] model instead of the simulator.
async fn engine(
    plan: &Arc<ValidatedPlan>,
    prompts: &Arc<dyn PromptSet>,
    minimal: bool,
) -> (f64, f64) {
    let provider: Arc<dyn LlmProvider> = if minimal {
        Arc::new(Minimal)
    } else {
        zero_latency_sim()
    };
    let start = Instant::now();
    let result = execute(RunRequest {
        prompts: prompts.clone(),
        ..RunRequest::in_memory(plan.clone(), provider)
    })
    .await
    .expect("ran");
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(result.stats.completed, plan.len());
    let n = plan.len() as f64;
    (n / secs, n / (result.stats.makespan_ms / 1000.0))
}

fn zero_latency_sim() -> Arc<dyn LlmProvider> {
    Arc::new(SimProvider::new(SimConfig {
        latency: Latency::from_mean(0.0, 0.0),
        ..SimConfig::default()
    }))
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

/// One round's figures of one case, tasks/s.
#[derive(Default, Clone, Copy)]
struct Round {
    bare: f64,
    linked: f64,
    work: f64,
    engine: f64,
    engine_settled: f64,
    minimal: f64,
    minimal_settled: f64,
}

fn main() {
    planwave_alloc::configure();
    let rounds = env_usize("ROUNDS", 5);
    let (wide, chain) = (env_usize("WIDE", 10_000), env_usize("CHAIN", 5_000));
    let only = std::env::var("ONLY").unwrap_or_default();
    let runs = |side: &str| only.is_empty() || only == side;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let prompts: Arc<dyn PromptSet> = Arc::new(Templates::builtin());
    let cases = [
        (
            format!("wide {wide}"),
            Shape::Wide,
            Arc::new(ValidatedPlan::new(generate::wide(wide)).expect("valid")),
        ),
        (
            format!("chain {chain}"),
            Shape::Chain,
            Arc::new(ValidatedPlan::new(generate::chain(chain)).expect("valid")),
        ),
    ];
    // Warm-up: one of each, not counted.
    for (_, shape, plan) in &cases {
        if runs("bare") {
            rt.block_on(bare(*shape, plan.len(), false, None));
        }
        if runs("engine") || runs("minimal") {
            rt.block_on(engine(plan, &prompts, !runs("engine")));
        }
    }
    let mut figures = vec![Vec::<Round>::new(); cases.len()];
    for round in 1..=rounds {
        for (c, (name, shape, plan)) in cases.iter().enumerate() {
            let mut r = Round::default();
            if runs("bare") {
                r.bare = rt.block_on(bare(*shape, plan.len(), false, None));
                r.linked = rt.block_on(bare(*shape, plan.len(), true, None));
            }
            if runs("work") {
                let work = Work {
                    plan: plan.clone(),
                    prompts: prompts.clone(),
                    provider: zero_latency_sim(),
                };
                r.work = rt.block_on(bare(*shape, plan.len(), false, Some(work)));
            }
            if runs("engine") {
                (r.engine, r.engine_settled) = rt.block_on(engine(plan, &prompts, false));
            }
            if runs("minimal") {
                (r.minimal, r.minimal_settled) = rt.block_on(engine(plan, &prompts, true));
            }
            println!(
                "round {round} {name}: bare {:.0} linked {:.0} work {:.0} | engine {:.0} \
                 (settled {:.0}) minimal {:.0} (settled {:.0}) tasks/s | engine/bare {:.2} \
                 minimal/bare {:.2} minimal settled/bare {:.2} engine/work {:.2}",
                r.bare,
                r.linked,
                r.work,
                r.engine,
                r.engine_settled,
                r.minimal,
                r.minimal_settled,
                r.engine / r.bare,
                r.minimal / r.bare,
                r.minimal_settled / r.bare,
                r.engine / r.work,
            );
            figures[c].push(r);
        }
    }
    for ((name, _, _), rs) in cases.iter().zip(figures) {
        let col = |f: fn(&Round) -> f64| median(rs.iter().map(f).collect());
        let ratio = |f: fn(&Round) -> f64| {
            let v: Vec<f64> = rs.iter().map(|r| f(r) / r.bare).collect();
            format!(
                "{:.2} ({:.2}-{:.2})",
                median(v.clone()),
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(0.0, f64::max)
            )
        };
        println!(
            "median {name}: bare {:.0} linked {:.0} work {:.0} engine {:.0} (settled {:.0}) \
             minimal {:.0} (settled {:.0}) tasks/s",
            col(|r| r.bare),
            col(|r| r.linked),
            col(|r| r.work),
            col(|r| r.engine),
            col(|r| r.engine_settled),
            col(|r| r.minimal),
            col(|r| r.minimal_settled),
        );
        println!(
            "ratios {name} (median of rounds, min-max): engine/bare {} engine settled/bare {} \
             minimal/bare {} minimal settled/bare {} engine/linked {} engine/work {} \
             engine settled/work {}",
            ratio(|r| r.engine),
            ratio(|r| r.engine_settled),
            ratio(|r| r.minimal),
            ratio(|r| r.minimal_settled),
            ratio(|r| r.engine * r.bare / r.linked),
            ratio(|r| r.engine * r.bare / r.work),
            ratio(|r| r.engine_settled * r.bare / r.work),
        );
    }
}
