//! `planwave research "GOAL" --out DIR`: the reflective loop. Each round plans (told the
//! previous round's reflection), runs, recovers failed tasks, and is evaluated and reflected
//! on; `DIR/rounds/<k>/` keeps every round. `DIR` itself gets the best round's report,
//! plan, sections, events and planner attempts, and a `run.json` that is that round's plus
//! `best_round`, `stop_reason` and a summary of every round.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use planwave_engine::{RunResult, RunStatus};
use planwave_orchestrator::{LoopContext, LoopError, StopReason, run_loop};
use serde::Serialize;

use super::events::{EventsOptions, human, open_stream};
use super::exit::{INTERRUPTED, Outcome};
use super::llm::{self, LlmOptions, MaxRounds, PlannerOptions, PromptOptions};
use super::mcp::McpOptions;
use super::options::{ExecOptions, SimOptions};
use super::rounds::RoundsDriver;
use super::run::{create_run_dir, lock_run_dir, outcome, print_summary, record_invocation};

#[derive(Debug, Args)]
pub struct ResearchArgs {
    /// The research goal, e.g. "深度分析特斯拉公司".
    pub goal: String,
    /// Run directory: report.md, plan.json, run.json, events.jsonl, sections/, planner/,
    /// rounds/<k>/.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Most rounds of plan -> run -> evaluate -> reflect (default: [orchestrator]
    /// max_reflection_rounds, else 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: Option<u32>,
    #[command(flatten)]
    pub planner: PlannerOptions,
    #[command(flatten)]
    pub exec: ExecOptions,
    #[command(flatten)]
    pub llm: LlmOptions,
    #[command(flatten)]
    pub prompts: PromptOptions,
    #[command(flatten)]
    pub sim: SimOptions,
    #[command(flatten)]
    pub events: EventsOptions,
    #[command(flatten)]
    pub mcp: McpOptions,
    /// No progress output; only the final summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `DIR/run.json`: the best round's run record plus the loop's.
#[derive(Serialize)]
struct LoopRun<'a> {
    #[serde(flatten)]
    run: &'a RunResult,
    best_round: Option<u32>,
    /// Why the loop stopped (`stop_reason` is the run's own: a cancelled round's).
    loop_stop_reason: StopReason,
    rounds: &'a [planwave_orchestrator::RoundRecord],
}

/// Answer attempts per evaluation, reflection or replacement, repairs included.
const ANSWER_ATTEMPTS: u32 = 3;

pub async fn research(args: ResearchArgs) -> anyhow::Result<Outcome> {
    let settings = llm::settings(&[
        &args.llm,
        &args.prompts,
        &args.planner,
        &args.exec,
        &args.mcp,
        &MaxRounds(args.max_rounds),
    ])?;
    let templates = llm::templates(&settings)?;
    let provider = llm::provider(&settings, args.sim.sim_config(args.exec.seed)?)?;
    let out = create_run_dir(&args.out)?;
    let _lock = lock_run_dir(&out)?;
    record_invocation(&out)?;
    // Rounds of an earlier research here would pass for this one's (and their journals would
    // be appended to); `run.json` `rounds[]` must describe exactly the directories present.
    let old_rounds = out.root().join("rounds");
    if old_rounds.is_dir() {
        eprintln!(
            "planwave: replacing {} from an earlier research",
            old_rounds.display()
        );
        std::fs::remove_dir_all(&old_rounds)
            .with_context(|| format!("clearing {}", old_rounds.display()))?;
    }
    let run_id = uuid::Uuid::new_v4();
    let stream = open_stream(run_id, &args.events)?;
    let cx = LoopContext {
        goal: args.goal.clone(),
        policy: settings.policy.clone(),
        provider: provider.clone(),
        templates: templates.clone(),
        answer_attempts: ANSWER_ATTEMPTS,
        interrupt: tokio_util::sync::CancellationToken::new(),
    };
    // Planning and execution handle Ctrl-C themselves; this also reaches the evaluator,
    // reflector and replanner calls in between.
    let ctrl_c = {
        let interrupt = cx.interrupt.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupt.cancel();
            }
        })
    };
    let run_deadline = settings.deadline;
    // Started once: the planner lists the tools and every round's subagents call them.
    let mcp = super::mcp::start(settings.mcp.as_ref(), args.quiet).await;
    let mut driver = RoundsDriver {
        goal: args.goal.clone(),
        provider,
        templates,
        config: settings.run.clone(),
        settings,
        deadline: run_deadline.map(|d| std::time::Instant::now() + d),
        durable: out.is_durable(),
        root: out.root().to_path_buf(),
        quiet: args.quiet,
        calls: HashMap::new(),
        attempts: HashMap::new(),
        events: HashMap::new(),
        run_id,
        stream: stream.clone(),
        mcp: mcp.clone(),
    };
    let looped = run_loop(&cx, &mut driver).await;
    ctrl_c.abort();
    if let Some(m) = &mcp {
        m.shutdown().await;
    }
    if let Some(s) = &stream {
        s.close().context("writing the --events stream")?;
    }
    let looped = match looped {
        Ok(l) => l,
        Err(e) => {
            // Nothing is lost: what the first round got to (its planning attempts, say) is
            // also where a single run would have put it.
            let _ = publish(&out.root().join("rounds").join("1"), out.root());
            return Err(match e {
                LoopError::Driver(e) => e,
                LoopError::Prompt(p) => anyhow::Error::new(p).context("rendering a prompt"),
            });
        }
    };
    let interrupted = looped.stop_reason == StopReason::Interrupted;
    // Interrupted, the round in progress is published instead, so `planwave resume DIR`
    // finishes its tasks; otherwise the best round is the result.
    let shown = if interrupted {
        looped.rounds.last()
    } else {
        looped
            .best_round
            .and_then(|b| looped.rounds.iter().find(|r| r.round == b))
    };
    let Some(best) = shown else {
        // Interrupted while planning the first round.
        return Ok(Outcome(INTERRUPTED));
    };
    let round_dir = out.root().join("rounds").join(best.round.to_string());
    publish(&round_dir, out.root())?;
    out.write_json(
        "run.json",
        &LoopRun {
            run: &best.result,
            best_round: looped.best_round,
            loop_stop_reason: looped.stop_reason,
            rounds: &looped.rounds,
        },
    )?;
    let mut h = human();
    let _ = writeln!(
        h,
        "planned in {} attempt(s): {} tasks",
        driver.attempts.get(&best.round).copied().unwrap_or(0),
        best.result.stats.tasks
    );
    print_summary(&best.result, &out);
    for r in &looped.rounds {
        let score = match (r.overall_score, r.correctness) {
            (Some(o), Some(c)) => format!("overall {o:.0}, correctness {c:.0}"),
            _ => "not evaluated".into(),
        };
        let recovery: Vec<&str> = r
            .passes
            .iter()
            .filter_map(|p| p.recovery.map(|s| s.as_str()))
            .collect();
        let _ = writeln!(
            h,
            "round {}: {} ({score}){}",
            r.round,
            r.status.as_str(),
            if recovery.is_empty() {
                String::new()
            } else {
                format!(", recovered by {}", recovery.join(", "))
            }
        );
    }
    let _ = writeln!(
        h,
        "stopped: {}; best round {}",
        looped.stop_reason.as_str(),
        looped.best_round.unwrap_or(best.round)
    );
    if interrupted {
        let _ = writeln!(
            h,
            "round {} is in {}; `planwave resume {}` finishes its tasks",
            best.round,
            out.root().display(),
            out.root().display()
        );
        if best.result.status != RunStatus::Cancelled {
            return Ok(Outcome(INTERRUPTED));
        }
    }
    Ok(outcome(&best.result))
}

/// Copies the best round's report, plan, sections, events and planner attempts to the top
/// of the run directory, replacing what an earlier run there left.
fn publish(round: &Path, top: &Path) -> anyhow::Result<()> {
    for f in ["report.md", "plan.json", "events.jsonl"] {
        let from = round.join(f);
        if from.is_file() {
            std::fs::copy(&from, top.join(f))
                .with_context(|| format!("copying {} to {}", from.display(), top.display()))?;
        }
    }
    for d in ["sections", "planner"] {
        let to = top.join(d);
        if to.is_dir() {
            std::fs::remove_dir_all(&to).with_context(|| format!("clearing {}", to.display()))?;
        }
        let from = round.join(d);
        if !from.is_dir() {
            continue;
        }
        std::fs::create_dir_all(&to).with_context(|| format!("creating {}", to.display()))?;
        for entry in
            std::fs::read_dir(&from).with_context(|| format!("reading {}", from.display()))?
        {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), to.join(entry.file_name()))
                    .with_context(|| format!("copying {}", entry.path().display()))?;
            }
        }
    }
    Ok(())
}
