//! The reflective loop as a job: `DIR/rounds/<k>/` per round, and `DIR` itself gets the best
//! round's report, plan, sections, events and planner attempts, with a `run.json` that is
//! that round's plus `best_round`, the loop's stop reason and a summary of every round.

use std::sync::Arc;

use crate::error::Context;
use planwave_config::Settings;
use planwave_orchestrator::{
    LoopContext, LoopError, LoopOutcome, RoundRecord, StopReason, recover_plan, run_loop,
    run_loop_from,
};
use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventKind, EventSink, RunResult};
use planwave_storage::{JsonlSink, RunDir};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::execute::Watch;
use crate::rounds::{RoundsDriver, RoundsSetup};
use crate::{Notes, Resources, RunnerError, open_journal};

/// Answer attempts per evaluation, reflection or replacement, repairs included.
const ANSWER_ATTEMPTS: u32 = 3;

/// `DIR/run.json`: the best round's run record plus the loop's.
#[derive(Serialize)]
pub struct LoopRun<'a> {
    #[serde(flatten)]
    pub run: &'a RunResult,
    pub best_round: Option<u32>,
    /// Why the loop stopped (`stop_reason` is the run's own: a cancelled round's).
    pub loop_stop_reason: StopReason,
    pub rounds: &'a [RoundRecord],
}

pub struct Research<'a> {
    pub goal: String,
    /// `run --recover`: this plan instead of a planned one, one round, recovered by the
    /// loop's policy but neither evaluated nor reflected on.
    pub plan: Option<ValidatedPlan>,
    /// `planwave resume`: go on from the rounds under `out` (the interrupted round's tasks
    /// kept) to the loop's stop condition, with the loop's own run id.
    pub resume: bool,
    /// With `resume`: the loop was `run --recover`'s one round, which goes on recovering
    /// and is neither evaluated nor reflected on.
    pub recover: bool,
    /// Opened and locked by the caller.
    pub out: RunDir,
    /// With the MCP servers started: the planner lists their tools, every round calls them.
    pub resources: Resources,
    /// The loop's policy, the planner's, the engine's and the whole loop's deadline.
    pub settings: &'a Settings,
    pub run_id: uuid::Uuid,
    /// The `--events` stream; closed here at the end.
    pub stream: Option<Arc<JsonlSink>>,
    pub quiet: bool,
    pub cancel: CancellationToken,
    pub watch: &'a dyn Watch,
    pub notes: &'a dyn Notes,
    /// A batch's cap on subagents in flight across its jobs; `None` for a command's own loop.
    pub slots: Option<planwave_engine::Slots>,
    /// Execute each round's plan while it streams (`research`; `--no-stream-plan` is false).
    pub stream_plan: bool,
}

pub struct ResearchOutcome {
    pub looped: LoopOutcome,
    /// The round published at the top of the run directory: the best one, or the round in
    /// progress when interrupted; `None` when interrupted while planning the first.
    pub shown: Option<u32>,
    /// Planning attempts per round, of the plan in use.
    pub attempts: std::collections::HashMap<u32, usize>,
}

impl ResearchOutcome {
    pub fn shown_round(&self) -> Option<&RoundRecord> {
        let shown = self.shown?;
        self.looped.rounds.iter().find(|r| r.round == shown)
    }
}

/// Runs the loop to its stop condition and publishes the shown round.
pub async fn research(r: Research<'_>) -> crate::Result<ResearchOutcome> {
    let run_id = if r.resume {
        crate::resume_loop::run_id(&r.out)?.unwrap_or(r.run_id)
    } else {
        clear_old_rounds(&r.out, r.notes)?;
        r.run_id
    };
    // The loop's own limit and the command's, whichever ends first.
    let limit = match (r.settings.deadline, r.settings.policy.timeout) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let deadline = limit.map(|d| std::time::Instant::now() + d);
    let cx = LoopContext {
        goal: r.goal.clone(),
        policy: r.settings.policy.clone(),
        provider: r.resources.provider.clone(),
        templates: r.resources.templates.clone(),
        tools: r.resources.planner_tools(),
        answer_attempts: ANSWER_ATTEMPTS,
        task_limit: r.settings.planner.task_limit,
        interrupt: r.cancel.clone(),
        deadline,
    };
    let out = r.out.clone();
    let goal = r.goal.clone();
    let stream = r.stream.clone();
    let r_run_id = run_id;
    let mut driver = RoundsDriver::new(RoundsSetup {
        goal: r.goal,
        resources: r.resources,
        planner: planner_config(r.settings, r.plan.as_ref()),
        cache: r.settings.plan_cache.as_ref().map(crate::PlanCache::new),
        config: r.settings.run.clone(),
        top: out.clone(),
        quiet: r.quiet,
        deadline,
        // A batch job (it has slots) shares the batch's root span.
        root_span: r.slots.is_none(),
        slots: r.slots,
        run_id,
        stream: r.stream,
        cancel: r.cancel,
        watch: r.watch,
        notes: r.notes,
        stream_plan: r.stream_plan,
    });
    let looped = match r.plan {
        Some(plan) => {
            driver.given_plan(1, planwave_record::PlanSource::File);
            recover_plan(&cx, &mut driver, plan, Vec::new()).await
        }
        None if r.resume && r.recover => resume_recover(&cx, &mut driver, &out, r.notes).await?,
        None if r.resume => {
            let start = crate::resume_loop::loop_start(&out, &mut driver, r.notes)?;
            run_loop_from(&cx, &mut driver, start).await
        }
        None => run_loop(&cx, &mut driver).await,
    };
    let attempts = std::mem::take(&mut driver.attempts);
    drop(driver);
    let looped = match looped {
        Ok(l) => l,
        Err(e) => {
            // Nothing is lost: what the first round got to (its planning attempts, say) is
            // also where a single run would have put it.
            let _ = publish(&out, 1);
            if let LoopError::Driver(RunnerError::NeedsInput(questions)) = &e {
                crate::needs_input::record(&out, r_run_id, &goal, questions)?;
            }
            if let Some(s) = &stream {
                s.close().context("writing the --events stream")?;
            }
            return Err(match e {
                LoopError::Driver(e) => e,
                LoopError::Prompt(p) => RunnerError::Failed {
                    doing: "rendering a prompt".into(),
                    source: Box::new(p),
                },
            });
        }
    };
    // Interrupted, the round in progress is published instead, so resuming finishes its
    // tasks; otherwise the best round is the result.
    let shown = if looped.stop_reason.cut_short() {
        looped.rounds.last().map(|r| r.round)
    } else {
        looped.best_round
    };
    let outcome = ResearchOutcome {
        looped,
        shown,
        attempts,
    };
    if let Some(best) = outcome.shown_round() {
        publish_result(&out, &outcome, best, r_run_id, stream.as_deref())?;
    }
    if let Some(s) = &stream {
        s.close().context("writing the --events stream")?;
    }
    Ok(outcome)
}

/// The planner's settings; a given plan (`run --recover`) is replanned in its own format.
fn planner_config(
    settings: &Settings,
    plan: Option<&ValidatedPlan>,
) -> planwave_planner::PlannerConfig {
    let mut config = settings.planner.clone();
    if let Some(p) = plan {
        config.format = p.spec().format;
    }
    config
}

/// The rest of an interrupted `run --recover`: its round on with the tasks completed kept,
/// recovered as before; a round that had finished has nothing left to recover.
async fn resume_recover(
    cx: &LoopContext,
    driver: &mut RoundsDriver<'_>,
    out: &RunDir,
    notes: &dyn Notes,
) -> crate::Result<Result<LoopOutcome, LoopError<RunnerError>>> {
    driver.given_plan(1, planwave_record::PlanSource::File);
    let start = crate::resume_loop::loop_start(out, driver, notes)?;
    Ok(match start.resume {
        Some((plan, preset)) => recover_plan(cx, driver, plan, preset).await,
        None => Ok(LoopOutcome {
            best_round: start.rounds.last().map(|r| r.round),
            rounds: start.rounds,
            stop_reason: StopReason::RunFinished,
        }),
    })
}

/// The shown round at the top of the run directory, closed by `loop_finished` (also on the
/// live stream), with the loop's `run.json`.
fn publish_result(
    out: &RunDir,
    outcome: &ResearchOutcome,
    shown: &RoundRecord,
    run_id: uuid::Uuid,
    stream: Option<&JsonlSink>,
) -> crate::Result<()> {
    publish(out, shown.round)?;
    let finished = Event::now(EventKind::LoopFinished {
        stop_reason: outcome.looped.stop_reason.as_str().into(),
        rounds: outcome.looped.rounds.len() as u32,
        best_round: outcome.looped.best_round,
    });
    let journal = open_journal(out, "events.jsonl", run_id)?;
    journal.emit(&finished);
    journal.close().context("writing loop_finished")?;
    if let Some(s) = stream {
        s.emit(&finished);
    }
    out.write_json(
        "run.json",
        &LoopRun {
            run: &shown.result,
            best_round: outcome.looped.best_round,
            loop_stop_reason: outcome.looped.stop_reason,
            rounds: &outcome.looped.rounds,
        },
    )?;
    Ok(())
}

/// Rounds of an earlier research here would pass for this one's (and their journals would
/// be appended to); `run.json` `rounds[]` must describe exactly the directories present.
fn clear_old_rounds(out: &RunDir, notes: &dyn Notes) -> crate::Result<()> {
    let old_rounds = out.path("rounds")?;
    if old_rounds.is_dir() {
        notes.note(&format!(
            "planwave: replacing {} from an earlier research",
            old_rounds.display()
        ));
        std::fs::remove_dir_all(&old_rounds)
            .with_context(|| format!("clearing {}", old_rounds.display()))?;
    }
    Ok(())
}

/// Copies round `round`'s report, plan, sections, events and planner attempts to the top of
/// the run directory through [`RunDir`] (atomic, durable, confined), replacing what an
/// earlier run there left.
fn publish(top: &RunDir, round: u32) -> crate::Result<()> {
    let from = top.path(&format!("rounds/{round}"))?;
    for f in ["report.md", "report.html", "plan.json", "events.jsonl"] {
        copy_file(top, &from, f)?;
    }
    for d in ["sections", "planner"] {
        let to = top.path(d)?;
        if to.is_dir() {
            std::fs::remove_dir_all(&to).with_context(|| format!("clearing {}", to.display()))?;
        }
        let src = from.join(d);
        if !src.is_dir() {
            continue;
        }
        std::fs::create_dir_all(&to).with_context(|| format!("creating {}", to.display()))?;
        for entry in
            std::fs::read_dir(&src).with_context(|| format!("reading {}", src.display()))?
        {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                let name = entry.file_name();
                copy_file(top, &from, &format!("{d}/{}", name.to_string_lossy()))?;
            }
        }
    }
    Ok(())
}

/// `from/rel` to `top/rel`, when present.
fn copy_file(top: &RunDir, from: &std::path::Path, rel: &str) -> crate::Result<()> {
    let src = from.join(rel);
    if !src.is_file() {
        return Ok(());
    }
    let bytes = std::fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
    top.write(rel, &bytes)
        .with_context(|| format!("copying {} to {}", src.display(), top.root().display()))?;
    Ok(())
}
