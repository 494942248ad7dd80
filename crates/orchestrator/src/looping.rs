//! The reflective loop (plan, run, evaluate, reflect, with adaptive
//! controller inside each round):
//!
//! ```text
//! round k: plan (with round k-1's reflection) -> run -> [recover failed tasks] -> evaluate
//!          -> stop? -> reflect -> stop? -> round k+1
//! ```
//!
//! Planning and running belong to the caller ([`Rounds`]): they write files and show
//! progress. This module decides: when to recover and how, when to stop, and what the next
//! round's planner is told.

use std::sync::Arc;

use planwave_llm::CallRecord;
use planwave_llm::{AgentRole, LlmProvider, RequestContext, RoundTag, SectionRef};
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::{
    EvaluatorVars, FailedStep, FailureNoteVars, PromptError, ReflectorVars, ReplanVars,
    RoundSection, RoundStats, StepReflectionVars, Templates,
};
use planwave_record::{EventKind, Preset, RunResult, RunStatus, TaskStatus};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::ask::{LoopQuestion, ask, with_raw};
use crate::judge::{parse_evaluation, parse_reflection, parse_step_reflection};
use crate::model::{Evaluation, Reflection, StepReflection};
use crate::policy::{
    LoopPolicy, StopReason, Strategy, Used, choose_strategy, stop_after_reflection,
    stop_before_reflection,
};
use crate::replan;

/// Section text given to the evaluator, per section, in characters.
const EVAL_SECTION_CHARS: usize = 2_000;

#[derive(Debug, thiserror::Error)]
pub enum LoopError<E> {
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("{0}")]
    Driver(E),
}

/// How planning a round went.
pub enum Planned<E> {
    Plan(Box<ValidatedPlan>),
    /// No plan: the loop stops for this reason (interrupted while planning).
    Stop(StopReason),
    /// No plan could be made (no valid plan, the model unavailable): what that means for
    /// the loop is its own rule ([`planning_failed`]).
    Failed(E),
}

/// What the caller does for the loop: planning and running, with files and progress.
#[async_trait::async_trait]
pub trait Rounds: Send {
    type Error: Send + std::fmt::Display;
    /// A fresh plan for `tag.round` (pass > 1: a complete replan inside the round). `note`
    /// is the previous round's reflection summary, or why the round's plan failed.
    async fn plan(
        &mut self,
        tag: RoundTag,
        note: Option<&str>,
    ) -> Result<Planned<Self::Error>, Self::Error>;
    /// Runs `plan` in the round's directory; `preset` tasks are already done. `fresh`: the
    /// round's earlier sections belong to a discarded plan.
    async fn execute(
        &mut self,
        tag: RoundTag,
        plan: Arc<ValidatedPlan>,
        preset: Vec<Preset>,
        fresh: bool,
    ) -> Result<RunResult, Self::Error>;
    /// Writes `rounds/<round>/<name>`.
    fn save(
        &mut self,
        round: u32,
        name: &str,
        value: &serde_json::Value,
    ) -> Result<(), Self::Error>;
    /// Model calls the loop made for a round (evaluator, reflector, replanner): they join
    /// the round's `calls[]`; with `result` (the round's run record), that is written
    /// again with them.
    fn add_calls(
        &mut self,
        round: u32,
        calls: Vec<CallRecord>,
        result: Option<&mut RunResult>,
    ) -> Result<(), Self::Error>;
    /// A loop event (`round_started`, `recovery`, `evaluation`, `reflection`,
    /// `round_finished`) for round `round`'s journal and the live stream; best effort.
    fn event(&mut self, round: u32, kind: EventKind);
    /// A progress line.
    fn progress(&mut self, line: &str);
    /// A line the person must see even when progress is quiet.
    fn warn(&mut self, line: &str);
}

pub struct LoopContext {
    pub goal: String,
    pub policy: LoopPolicy,
    pub provider: Arc<dyn LlmProvider>,
    pub templates: Arc<Templates>,
    /// Attempts per evaluation, reflection or replacement, repairs included.
    pub answer_attempts: u32,
    /// Ctrl-C: ends the loop between phases and cuts short a pending evaluation, reflection
    /// or replacement (planning and execution watch for it themselves).
    pub interrupt: CancellationToken,
    /// When the loop's time is up (`task_timeout_secs`, `--deadline`): no round starts after
    /// it, and an execution the driver cuts short for it ends the loop as `timeout`.
    pub deadline: Option<std::time::Instant>,
}

impl LoopContext {
    fn timed_out(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }

    /// Why a round that ended cancelled stopped: Ctrl-C, else the loop's time limit.
    fn cut_short(&self) -> StopReason {
        if self.interrupt.is_cancelled() || !self.timed_out() {
            StopReason::Interrupted
        } else {
            StopReason::Timeout
        }
    }
}

/// `ask`, unless interrupted first (`Ok(None)`).
async fn interruptible<T, E>(
    cx: &LoopContext,
    f: impl std::future::Future<Output = Result<crate::ask::Asked<T>, E>>,
) -> Result<Option<crate::ask::Asked<T>>, E> {
    tokio::select! {
        r = f => r.map(Some),
        _ = cx.interrupt.cancelled() => Ok(None),
    }
}

/// Asks the evaluator or reflector and keeps what happened: `rounds/<k>/<name>.json` holds
/// the answer (under `name`) with every attempt, and the attempts join the round's calls.
/// `Ok(None)` when interrupted first.
async fn ask_and_keep<R: Rounds, T: Serialize>(
    cx: &LoopContext,
    driver: &mut R,
    k: u32,
    result: &mut RunResult,
    question: LoopQuestion<'_, T>,
    name: &str,
) -> Result<Option<crate::ask::Asked<T>>, LoopError<R::Error>> {
    let role = question.role;
    let Some(asked) = interruptible(cx, ask(&cx.provider, &cx.templates, question)).await? else {
        return Ok(None);
    };
    let mut kept = serde_json::Map::new();
    kept.insert(name.to_owned(), json!(asked.value));
    kept.insert("attempts".to_owned(), json!(with_raw(&asked.attempts)));
    driver
        .save(k, &format!("{name}.json"), &serde_json::Value::Object(kept))
        .map_err(LoopError::Driver)?;
    driver
        .add_calls(k, asked.call_records(role), Some(result))
        .map_err(LoopError::Driver)?;
    Ok(Some(asked))
}

/// One execution pass of a round.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PassRecord {
    pub pass: u32,
    pub status: RunStatus,
    pub completed: usize,
    pub failed: usize,
    pub blocked: usize,
    /// Failed tasks with their failure kind.
    pub failed_tasks: Vec<serde_json::Value>,
    /// The recovery strategy applied after this pass, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Strategy>,
    /// Why recovery was not possible (no valid replacement, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_error: Option<String>,
    /// The reflector's analysis and recommended strategy (step-level reflection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_reflection: Option<StepReflection>,
}

/// One round, as summarised in `run.json` `rounds[]`.
#[derive(Clone, Debug, Serialize)]
pub struct RoundRecord {
    pub round: u32,
    pub status: RunStatus,
    pub passes: Vec<PassRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overall_score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correctness: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_successful: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub should_replan: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluation_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reflection_id: Option<String>,
    #[serde(skip)]
    pub evaluation: Option<Evaluation>,
    #[serde(skip)]
    pub result: RunResult,
}

#[derive(Debug)]
pub struct LoopOutcome {
    pub rounds: Vec<RoundRecord>,
    /// The round whose report is the final one.
    pub best_round: Option<u32>,
    pub stop_reason: StopReason,
}

/// The best round: highest overall score, then correctness, then the later round. Rounds
/// without an evaluation only count when no round has one.
pub fn best_round(rounds: &[RoundRecord]) -> Option<u32> {
    let key = |r: &RoundRecord| {
        r.evaluation.as_ref().map(|e| {
            (
                e.overall_score,
                e.dimensions.correctness,
                f64::from(r.round),
            )
        })
    };
    rounds
        .iter()
        .filter(|r| key(r).is_some())
        .max_by(|a, b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .or_else(|| rounds.last())
        .map(|r| r.round)
}

fn pass_record(pass: u32, r: &RunResult) -> PassRecord {
    PassRecord {
        pass,
        status: r.status,
        completed: r.stats.completed,
        failed: r.stats.failed,
        blocked: r.stats.blocked,
        failed_tasks: r
            .tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Failed)
            .map(|t| json!({"id": t.id, "failure_kind": t.failure_kind, "error": t.error}))
            .collect(),
        recovery: None,
        recovery_error: None,
        step_reflection: None,
    }
}

/// Completed tasks of `old` that exist (by id) in `new`, as presets for `new`.
fn carry_over(old: &ValidatedPlan, result: &RunResult, new: &ValidatedPlan) -> Vec<Preset> {
    let mut out = Vec::new();
    for (i, rec) in result.tasks.iter().enumerate().take(old.len()) {
        if rec.status != TaskStatus::Completed {
            continue;
        }
        let (Some(section), Some(index)) = (
            result.sections.get(i).cloned().flatten(),
            new.index_of(old.id(i)),
        ) else {
            continue;
        };
        out.push(Preset {
            index,
            record: rec.clone(),
            section,
        });
    }
    out
}

fn round_sections(plan: &ValidatedPlan, result: &RunResult, with_text: bool) -> Vec<RoundSection> {
    (0..plan.len())
        .map(|i| {
            let rec = result.tasks.get(i);
            RoundSection {
                id: plan.id(i).to_string(),
                title: plan.task(i).title().to_owned(),
                status: rec
                    .map(|r| r.status.as_str())
                    .unwrap_or("pending")
                    .to_owned(),
                deps: plan
                    .deps(i)
                    .iter()
                    .map(|&d| plan.id(d as usize).to_string())
                    .collect(),
                text: if with_text {
                    result
                        .sections
                        .get(i)
                        .cloned()
                        .flatten()
                        .map(|s| s.chars().take(EVAL_SECTION_CHARS).collect())
                } else {
                    None
                },
                error: rec.and_then(|r| r.error.clone()),
                expected: plan
                    .task(i)
                    .expected_output
                    .as_deref()
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned),
            }
        })
        .collect()
}

fn refs(sections: &[RoundSection]) -> Vec<SectionRef> {
    sections
        .iter()
        .map(|s| SectionRef {
            id: s.id.clone(),
            title: s.title.clone(),
            status: s.status.clone(),
        })
        .collect()
}

/// What a complete replan is told about the plan that failed.
fn failure_note(cx: &LoopContext, lang: Lang, result: &RunResult) -> Result<String, PromptError> {
    let failed: Vec<String> = result
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Failed)
        .map(|t| format!("{} ({})", t.description, t.error.as_deref().unwrap_or("?")))
        .collect();
    cx.templates
        .failure_note(lang, &FailureNoteVars { failed: &failed })
}

/// The loop's rule for a plan that could not be made: the first round's first plan failing
/// is the loop's error (there is nothing to show); a later one stops the loop with
/// `planning_failed`, keeping the rounds so far.
fn planning_failed<R: Rounds>(
    driver: &mut R,
    tag: RoundTag,
    e: R::Error,
) -> Result<StopReason, LoopError<R::Error>> {
    if tag.round == 1 && tag.pass == 1 {
        return Err(LoopError::Driver(e));
    }
    driver.warn(&format!("round {}: planning failed: {e:#}", tag.round));
    Ok(StopReason::PlanningFailed)
}

pub async fn run_loop<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
) -> Result<LoopOutcome, LoopError<R::Error>> {
    run_loop_from(cx, driver, LoopStart::default()).await
}

/// Where a loop starts: from nothing, or (`planwave resume`) after the rounds an earlier
/// process finished, with the round it was in the middle of.
#[derive(Default)]
pub struct LoopStart {
    /// Rounds already finished (their results as recorded, sections not loaded).
    pub rounds: Vec<RoundRecord>,
    /// The last finished round's reflection summary, for the next round's planner.
    pub note: Option<String>,
    /// The interrupted round's plan and the tasks its journal shows completed: the first
    /// round runs it (no planning) with those kept.
    pub resume: Option<(ValidatedPlan, Vec<Preset>)>,
}

/// The loop from `start`: `run_loop` from nothing, or the rest of an interrupted one.
pub async fn run_loop_from<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    start: LoopStart,
) -> Result<LoopOutcome, LoopError<R::Error>> {
    let p = &cx.policy;
    let LoopStart {
        mut rounds,
        mut note,
        mut resume,
    } = start;
    // Rounds in a row, up to the last finished one, that ended with failed tasks.
    let mut consecutive_failed = rounds
        .iter()
        .rev()
        .take_while(|r| r.result.stats.failed > r.result.stats.optional_failed)
        .count() as u32;
    // A loop stopped after its last finished round (and cut off before it could say so)
    // stays stopped.
    let already = match (resume.is_none(), rounds.last()) {
        (true, Some(last)) => stopped_after(p, last, consecutive_failed),
        _ => None,
    };
    let stop_reason = loop {
        if let Some(reason) = already {
            break reason;
        }
        if cx.interrupt.is_cancelled() {
            break StopReason::Interrupted;
        }
        if cx.timed_out() {
            break StopReason::Timeout;
        }
        let k = rounds.len() as u32 + 1;
        let first = RoundTag { round: k, pass: 1 };
        driver.event(
            k,
            EventKind::RoundStarted {
                round: k,
                reflected: note.is_some(),
            },
        );
        let (plan, preset) = match resume.take() {
            Some((plan, preset)) => (Arc::new(plan), preset),
            None => match round_plan(driver, first, note.as_deref()).await? {
                Ok(plan) => (plan, Vec::new()),
                Err(reason) => break reason,
            },
        };
        let run = run_passes(cx, driver, k, plan, preset).await?;
        let (mut record, run) = round_record(k, run);
        if run.interrupted {
            // Not finished: no round.json, so a resume runs this round on.
            rounds.push(record);
            break cx.cut_short();
        }
        consecutive_failed = if record.result.stats.failed > record.result.stats.optional_failed {
            consecutive_failed + 1
        } else {
            0
        };
        let (evaluation, context) =
            match evaluate(cx, driver, (&run.plan, run.lang), run.tag, &mut record).await? {
                Ok(e) => e,
                Err(reason) => {
                    finished(driver, &mut rounds, record);
                    break reason;
                }
            };
        let stop = stop_before_reflection(p, k, &evaluation, consecutive_failed);
        if !p.auto_reflection {
            finished(driver, &mut rounds, record);
            break stop.unwrap_or(StopReason::AutoReflectionOff);
        }
        // The last round is reflected on too: its reflection is the run's lessons, kept in
        // `reflection.json` even though no round follows.
        let reflected = reflect(
            cx,
            driver,
            (&run.plan, run.lang),
            context,
            &evaluation,
            &mut record,
        )
        .await?;
        finished(driver, &mut rounds, record);
        if let Some(reason) = stop {
            break reason;
        }
        let reflection = match reflected {
            Ok(r) => r,
            Err(reason) => break reason,
        };
        if let Some(reason) = stop_after_reflection(&reflection) {
            break reason;
        }
        let summary = reflection.summary(Some(&evaluation), run.lang, &cx.templates)?;
        driver
            .save(k, "reflection-summary.json", &json!({ "summary": summary }))
            .map_err(LoopError::Driver)?;
        note = Some(summary);
    };
    Ok(LoopOutcome {
        best_round: best_round(&rounds),
        rounds,
        stop_reason,
    })
}

/// A round's fresh plan, or why the loop stops instead.
async fn round_plan<R: Rounds>(
    driver: &mut R,
    tag: RoundTag,
    note: Option<&str>,
) -> Result<Result<Arc<ValidatedPlan>, StopReason>, LoopError<R::Error>> {
    Ok(
        match driver.plan(tag, note).await.map_err(LoopError::Driver)? {
            Planned::Plan(plan) => Ok(Arc::new(*plan)),
            Planned::Stop(reason) => Err(reason),
            Planned::Failed(e) => Err(planning_failed(driver, tag, e)?),
        },
    )
}

/// Round `k`'s record from its passes (not yet evaluated), and what is left of them.
fn round_record(k: u32, run: Passes) -> (RoundRecord, PassesLeft) {
    let record = RoundRecord {
        round: k,
        status: run.result.status,
        passes: run.passes,
        overall_score: None,
        correctness: None,
        is_successful: None,
        should_replan: None,
        evaluation_id: None,
        reflection_id: None,
        evaluation: None,
        result: run.result,
    };
    let left = PassesLeft {
        plan: run.plan,
        lang: run.lang,
        interrupted: run.interrupted,
        tag: run.tag,
    };
    (record, left)
}

/// What evaluation and reflection need of a round's passes once its record is made.
struct PassesLeft {
    plan: Arc<ValidatedPlan>,
    lang: Lang,
    interrupted: bool,
    tag: RoundTag,
}

/// `recovery`: the strategy a pass's failed tasks get.
fn recovery_event<R: Rounds>(
    driver: &mut R,
    tag: RoundTag,
    strategy: Strategy,
    result: &RunResult,
) {
    let tasks = result
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Failed && !t.optional)
        .map(|t| t.id.clone())
        .collect();
    driver.event(
        tag.round,
        EventKind::Recovery {
            round: tag.round,
            pass: tag.pass,
            strategy: strategy.as_str().into(),
            tasks,
        },
    );
}

/// Whether the loop stopped after finished round `last`, by the rules it went by then.
fn stopped_after(
    p: &LoopPolicy,
    last: &RoundRecord,
    consecutive_failed: u32,
) -> Option<StopReason> {
    let Some(evaluation) = &last.evaluation else {
        return Some(StopReason::EvaluationFailed);
    };
    if let Some(reason) = stop_before_reflection(p, last.round, evaluation, consecutive_failed) {
        return Some(reason);
    }
    if !p.auto_reflection {
        return Some(StopReason::AutoReflectionOff);
    }
    match last.should_replan {
        Some(false) => Some(StopReason::NoReplan),
        Some(true) => None,
        None => Some(StopReason::ReflectionFailed),
    }
}

/// Round `record` is over: `round_finished`, then it joins the loop's rounds.
fn finished<R: Rounds>(driver: &mut R, rounds: &mut Vec<RoundRecord>, record: RoundRecord) {
    // `round.json` lets a resume rebuild this round's record; losing it costs that only.
    if let Err(e) = driver.save(record.round, "round.json", &json!(record)) {
        driver.warn(&format!(
            "round {}: round.json not written: {e}",
            record.round
        ));
    }
    driver.event(
        record.round,
        EventKind::RoundFinished {
            round: record.round,
            status: record.status.as_str().into(),
            passes: record.passes.len() as u32,
        },
    );
    rounds.push(record);
}

/// `run --recover`: one round on a given plan, its failed tasks recovered by the loop's
/// policy (retry, partial or complete replan, with `cx.goal` as the goal), neither evaluated
/// nor reflected on.
///
/// `preset`: the tasks an interrupted earlier process completed (`planwave resume`).
pub async fn recover_plan<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    plan: ValidatedPlan,
    preset: Vec<Preset>,
) -> Result<LoopOutcome, LoopError<R::Error>> {
    driver.event(
        1,
        EventKind::RoundStarted {
            round: 1,
            reflected: false,
        },
    );
    let run = run_passes(cx, driver, 1, Arc::new(plan), preset).await?;
    let stop_reason = if run.interrupted {
        cx.cut_short()
    } else {
        StopReason::RunFinished
    };
    let (record, _) = round_record(1, run);
    let mut rounds = Vec::new();
    if stop_reason == StopReason::RunFinished {
        finished(driver, &mut rounds, record);
    } else {
        rounds.push(record);
    }
    Ok(LoopOutcome {
        rounds,
        best_round: Some(1),
        stop_reason,
    })
}

/// A round's passes: its execution, then recovery while the policy finds a strategy.
struct Passes {
    /// The plan the last pass ran (a recovery may have replaced it).
    plan: Arc<ValidatedPlan>,
    /// The round's language: its first plan's.
    lang: Lang,
    passes: Vec<PassRecord>,
    result: RunResult,
    interrupted: bool,
    /// The last pass's tag.
    tag: RoundTag,
}

/// `preset`: tasks an interrupted earlier process completed in this round (resume).
async fn run_passes<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    k: u32,
    mut plan: Arc<ValidatedPlan>,
    mut preset: Vec<Preset>,
) -> Result<Passes, LoopError<R::Error>> {
    let lang = plan.lang();
    let mut passes: Vec<PassRecord> = Vec::new();
    let mut used = Used::default();
    let mut tag = RoundTag { round: k, pass: 1 };
    // A resumed round keeps its sections; a fresh one starts clean.
    let mut fresh = preset.is_empty();
    let (result, interrupted) = loop {
        let mut result = driver
            .execute(tag, plan.clone(), std::mem::take(&mut preset), fresh)
            .await
            .map_err(LoopError::Driver)?;
        passes.push(pass_record(tag.pass, &result));
        if result.status == RunStatus::Cancelled {
            break (result, true);
        }
        let Some(rule) = choose_strategy(&cx.policy, &result.tasks, used) else {
            break (result, false);
        };
        let last = passes.len() - 1;
        let Some((strategy, reflected)) =
            choose(cx, driver, (&plan, lang), tag, &mut result, (rule, used)).await?
        else {
            break (result, true);
        };
        let analysis = reflected.as_ref().map(|r| r.analysis.clone());
        passes[last].step_reflection = reflected;
        recovery_event(driver, tag, strategy, &result);
        passes[last].recovery = Some(strategy);
        driver.progress(&format!(
            "round {k}: {} task(s) failed; recovering with {}",
            result.stats.failed,
            strategy.as_str()
        ));
        let next = RoundTag {
            round: k,
            pass: tag.pass + 1,
        };
        match strategy {
            Strategy::RetryStep => {
                used.retries += 1;
                preset = carry_over(&plan, &result, &plan);
                fresh = false;
            }
            Strategy::ReplanFromFailure => {
                used.replans += 1;
                match replacement(cx, driver, &plan, &result, next, analysis.as_deref()).await? {
                    Ok(merged) => {
                        preset = carry_over(&plan, &result, &merged);
                        plan = Arc::new(merged);
                        fresh = false;
                    }
                    Err(why) => {
                        driver.progress(&format!("round {k}: no replacement plan: {why}"));
                        passes[last].recovery_error = Some(why);
                        break (result, cx.interrupt.is_cancelled());
                    }
                }
            }
            Strategy::CompleteReplan => {
                used.replans += 1;
                let mut why = failure_note(cx, lang, &result)?;
                if let Some(a) = &analysis {
                    why = format!("{why}\n{a}");
                }
                let stopped = match driver
                    .plan(next, Some(&why))
                    .await
                    .map_err(LoopError::Driver)?
                {
                    Planned::Plan(new) => {
                        plan = Arc::new(*new);
                        preset = Vec::new();
                        fresh = true;
                        None
                    }
                    Planned::Stop(reason) => Some(reason),
                    Planned::Failed(e) => Some(planning_failed(driver, next, e)?),
                };
                if let Some(reason) = stopped {
                    passes[last].recovery_error =
                        Some(format!("replanning stopped: {}", reason.as_str()));
                    break (result, reason == StopReason::Interrupted);
                }
            }
        }
        tag = next;
    };
    Ok(Passes {
        plan,
        lang,
        passes,
        result,
        interrupted,
        tag,
    })
}

/// The round's evaluation (kept in the record) and the request context the reflection
/// reuses, or why the loop stops here.
type Evaluated = Result<(Evaluation, RequestContext), StopReason>;

async fn evaluate<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    (plan, lang): (&ValidatedPlan, Lang),
    tag: RoundTag,
    record: &mut RoundRecord,
) -> Result<Evaluated, LoopError<R::Error>> {
    let k = record.round;
    let sections = round_sections(plan, &record.result, true);
    let stats = RoundStats {
        tasks: plan.len(),
        completed: record.result.stats.completed,
        failed: record.result.stats.failed,
        blocked: record.result.stats.blocked,
    };
    let context = RequestContext {
        lang,
        topic: cx.goal.clone(),
        sections: refs(&sections),
        round: Some(tag),
        ..RequestContext::default()
    };
    let messages = cx.templates.evaluator(
        lang,
        &EvaluatorVars {
            goal: &cx.goal,
            round: k,
            max_rounds: cx.policy.max_rounds,
            stats,
            sections: &sections,
        },
    )?;
    let judge = |raw: &str| {
        parse_evaluation(raw).map(|mut e| {
            if e.evaluation_id.is_empty() {
                e.evaluation_id = format!("eval_r{k}");
            }
            e
        })
    };
    let question = LoopQuestion {
        role: AgentRole::Evaluator,
        lang,
        messages,
        context: context.clone(),
        what: "evaluation",
        attempts: cx.answer_attempts,
        judge: &judge,
    };
    let asked = ask_and_keep(cx, driver, k, &mut record.result, question, "evaluation").await?;
    let Some(asked) = asked else {
        return Ok(Err(StopReason::Interrupted));
    };
    let Some(evaluation) = asked.value.clone() else {
        driver.progress(&format!(
            "round {k}: evaluation failed: {}",
            asked.why_not()
        ));
        return Ok(Err(StopReason::EvaluationFailed));
    };
    driver.progress(&format!(
        "round {k}: overall {:.0}, correctness {:.0}, {}",
        evaluation.overall_score,
        evaluation.dimensions.correctness,
        if evaluation.is_successful {
            "successful"
        } else {
            "not successful"
        }
    ));
    record.overall_score = Some(evaluation.overall_score);
    record.correctness = Some(evaluation.dimensions.correctness);
    record.is_successful = Some(evaluation.is_successful);
    record.evaluation_id = Some(evaluation.evaluation_id.clone());
    driver.event(
        k,
        EventKind::Evaluation {
            round: k,
            evaluation_id: evaluation.evaluation_id.clone(),
            overall_score: evaluation.overall_score,
            correctness: evaluation.dimensions.correctness,
            is_successful: evaluation.is_successful,
        },
    );
    record.evaluation = Some(evaluation.clone());
    Ok(Ok((evaluation, context)))
}

/// The round's reflection (`should_replan` kept in the record), or why the loop stops here.
async fn reflect<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    (plan, lang): (&ValidatedPlan, Lang),
    context: RequestContext,
    evaluation: &Evaluation,
    record: &mut RoundRecord,
) -> Result<Result<Reflection, StopReason>, LoopError<R::Error>> {
    let k = record.round;
    let tasks = round_sections(plan, &record.result, false);
    let eval_json = serde_json::to_value(evaluation).unwrap_or_default();
    let messages = cx.templates.reflector(
        lang,
        &ReflectorVars {
            goal: &cx.goal,
            round: k,
            max_rounds: cx.policy.max_rounds,
            tasks: &tasks,
            evaluation: &eval_json,
        },
    )?;
    let judge = |raw: &str| {
        parse_reflection(raw).map(|mut r| {
            if r.reflection_id.is_empty() {
                r.reflection_id = format!("refl_r{k}");
            }
            r
        })
    };
    let question = LoopQuestion {
        role: AgentRole::Reflector,
        lang,
        messages,
        context,
        what: "reflection",
        attempts: cx.answer_attempts,
        judge: &judge,
    };
    let asked = ask_and_keep(cx, driver, k, &mut record.result, question, "reflection").await?;
    let Some(asked) = asked else {
        return Ok(Err(StopReason::Interrupted));
    };
    let Some(reflection): Option<Reflection> = asked.value.clone() else {
        driver.progress(&format!(
            "round {k}: reflection failed: {}",
            asked.why_not()
        ));
        return Ok(Err(StopReason::ReflectionFailed));
    };
    record.should_replan = Some(reflection.should_replan);
    record.reflection_id = Some(reflection.reflection_id.clone());
    driver.event(
        k,
        EventKind::Reflection {
            round: k,
            reflection_id: reflection.reflection_id.clone(),
            should_replan: reflection.should_replan,
        },
    );
    Ok(Ok(reflection))
}

/// The recovery of a pass: the rule's choice, or with step-level reflection the
/// reflector's (with its analysis) when it gives a valid one. `None` when interrupted.
async fn choose<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    plan: (&ValidatedPlan, Lang),
    tag: RoundTag,
    result: &mut RunResult,
    (rule, used): (Strategy, Used),
) -> Result<Option<(Strategy, Option<StepReflection>)>, LoopError<R::Error>> {
    if !cx.policy.step_reflection {
        return Ok(Some((rule, None)));
    }
    let offered = crate::policy::available(&cx.policy, used, rule);
    Ok(
        match step_reflect(cx, driver, plan, tag, result, &offered).await? {
            Some(r) => Some((r.strategy, Some(r))),
            None if cx.interrupt.is_cancelled() => None,
            None => Some((rule, None)),
        },
    )
}

/// Seed 001's step-level reflection: the reflector analyses the pass's failed tasks and
/// recommends one of `offered` (kept as `rounds/<k>/step-reflection-pass-<p>.json`).
/// `None` when no valid answer came (the rule's choice stands) or when interrupted.
async fn step_reflect<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    (plan, lang): (&ValidatedPlan, Lang),
    tag: RoundTag,
    result: &mut RunResult,
    offered: &[Strategy],
) -> Result<Option<StepReflection>, LoopError<R::Error>> {
    let failed: Vec<FailedStep> = result
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == TaskStatus::Failed && !t.optional)
        .map(|(i, t)| FailedStep {
            id: t.id.to_string(),
            title: plan.task(i).title().to_owned(),
            kind: t.failure_kind.map_or("fatal", |k| k.as_str()).to_owned(),
            error: t.error.clone().unwrap_or_default(),
        })
        .collect();
    let allowed: Vec<&str> = offered.iter().map(|s| s.as_str()).collect();
    let messages = cx.templates.step_reflection(
        lang,
        &StepReflectionVars {
            goal: &cx.goal,
            round: tag.round,
            pass: tag.pass,
            failed: &failed,
            completed: result.stats.completed,
            blocked: result.stats.blocked,
            total: result.stats.tasks,
            allowed: &allowed,
        },
    )?;
    let context = RequestContext {
        lang,
        topic: cx.goal.clone(),
        // The failed tasks, their kind in the status (the simulator reads it).
        sections: failed
            .iter()
            .map(|f| SectionRef {
                id: f.id.clone(),
                title: f.title.clone(),
                status: format!("failed:{}", f.kind),
            })
            .collect(),
        round: Some(tag),
        step_reflection: true,
        ..RequestContext::default()
    };
    let judge = |raw: &str| parse_step_reflection(raw, offered);
    let question = LoopQuestion {
        role: AgentRole::Reflector,
        lang,
        messages,
        context,
        what: "step reflection",
        attempts: cx.answer_attempts,
        judge: &judge,
    };
    let name = format!("step-reflection-pass-{}", tag.pass);
    let Some(asked) = ask_and_keep(cx, driver, tag.round, result, question, &name).await? else {
        return Ok(None);
    };
    if asked.value.is_none() {
        driver.progress(&format!(
            "round {}: step reflection failed ({}); the rule's strategy is used",
            tag.round,
            asked.why_not()
        ));
    }
    Ok(asked.value)
}

/// Asks the planner for replacements of the failed tasks and their blocked descendants;
/// `Ok(Err(why))` when no valid replacement came back.
async fn replacement<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    plan: &ValidatedPlan,
    result: &RunResult,
    tag: RoundTag,
    analysis: Option<&str>,
) -> Result<Result<ValidatedPlan, String>, LoopError<R::Error>> {
    let lang = plan.lang();
    let (kept, replace) = replan::split(plan, &result.tasks);
    let messages = cx.templates.replan(
        lang,
        &ReplanVars {
            goal: &cx.goal,
            kept: &kept,
            replace: &replace,
            next_id: replan::next_id(plan),
            analysis,
        },
    )?;
    let judge = |raw: &str| replan::merge(plan, &result.tasks, raw);
    let asked = interruptible(
        cx,
        ask(
            &cx.provider,
            &cx.templates,
            LoopQuestion {
                role: AgentRole::Planner,
                lang,
                messages,
                context: RequestContext {
                    lang,
                    topic: cx.goal.clone(),
                    sections: replan::context_sections(&kept, &replace),
                    round: Some(tag),
                    ..RequestContext::default()
                },
                what: "replacement tasks",
                attempts: cx.answer_attempts,
                judge: &judge,
            },
        ),
    )
    .await?;
    let Some(asked) = asked else {
        return Ok(Err("interrupted".into()));
    };
    driver
        .save(
            tag.round,
            &format!("replan-pass-{}.json", tag.pass),
            &json!({
                "replaced": replace.iter().map(|t| &t.id).collect::<Vec<_>>(),
                "kept": kept.iter().map(|t| &t.id).collect::<Vec<_>>(),
                "attempts": with_raw(&asked.attempts),
            }),
        )
        .map_err(LoopError::Driver)?;
    driver
        .add_calls(tag.round, asked.call_records(AgentRole::Planner), None)
        .map_err(LoopError::Driver)?;
    let why = asked.why_not();
    Ok(asked.value.ok_or(why))
}

#[cfg(test)]
mod tests;
