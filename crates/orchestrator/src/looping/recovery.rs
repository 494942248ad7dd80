//! Recovering a pass's failed tasks: which strategy (the policy's rule, or the step
//! reflection's), the `recovery` event, and what the strategy makes of the next pass.

use std::sync::Arc;

use planwave_llm::ToolResultRef;
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::{FailureNoteVars, PromptError};
use planwave_record::{EventKind, Preset, RoundTag, RunResult, TaskStatus};

use super::planning::planning_failed;
use super::reflection::step_reflect;
use super::replacement::replacement;
use super::rounds::{LoopContext, LoopError, Planned, Rounds};
use crate::model::StepReflection;
use crate::policy::{StopReason, Strategy, Used};

/// The recovery of a pass: the rule's choice, or with step-level reflection the
/// reflector's (with its analysis) when it gives a valid one. `None` when interrupted.
pub(super) async fn choose<R: Rounds>(
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

/// `recovery`: the strategy a pass's failed tasks get.
pub(super) fn recovery_event<R: Rounds>(
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

/// What a recovery leaves the next pass: the plan it runs, the tasks already done in it, and
/// whether it starts clean (a complete replan's sections belong to no earlier plan).
pub(super) struct NextPass {
    pub(super) plan: Arc<ValidatedPlan>,
    pub(super) preset: Vec<Preset>,
    pub(super) fresh: bool,
}

/// Why the round ends at a recovery instead (for the pass's `recovery_error`), and whether
/// that is an interruption.
pub(super) struct NoRecovery {
    pub(super) error: String,
    pub(super) interrupted: bool,
}

/// Applies `strategy` to the pass that ran `plan` (the round's language `lang`): the same
/// plan again with its completed tasks kept, a partial replan merged in, or a complete
/// replan from the caller, for pass `next`. `analysis`: the step reflection's, if any.
pub(super) async fn recover<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    (plan, lang): (&Arc<ValidatedPlan>, Lang),
    result: &RunResult,
    (strategy, next, analysis): (Strategy, RoundTag, Option<&str>),
    used: &mut Used,
) -> Result<Result<NextPass, NoRecovery>, LoopError<R::Error>> {
    let k = next.round;
    Ok(match strategy {
        Strategy::RetryStep => {
            used.retries += 1;
            Ok(NextPass {
                plan: plan.clone(),
                preset: carry_over(plan, result, plan),
                fresh: false,
            })
        }
        Strategy::ReplanFromFailure => {
            used.replans += 1;
            match replacement(cx, driver, plan, result, next, analysis).await? {
                Ok(merged) => Ok(NextPass {
                    preset: carry_over(plan, result, &merged),
                    plan: Arc::new(merged),
                    fresh: false,
                }),
                Err(why) => {
                    driver.progress(&format!("round {k}: no replacement plan: {why}"));
                    Err(NoRecovery {
                        error: why,
                        interrupted: cx.interrupt.is_cancelled(),
                    })
                }
            }
        }
        Strategy::CompleteReplan => {
            used.replans += 1;
            let mut why = failure_note(cx, lang, plan, result)?;
            if let Some(a) = analysis {
                why = format!("{why}\n{a}");
            }
            match driver
                .replan(next, &why, &failed_tools(plan, result))
                .await
                .map_err(LoopError::Driver)?
            {
                Planned::Plan(new) => Ok(NextPass {
                    plan: Arc::new(*new),
                    preset: Vec::new(),
                    fresh: true,
                }),
                Planned::Stop(reason) => Err(replanning_stopped(reason)),
                Planned::Failed(e) => Err(replanning_stopped(planning_failed(driver, next, e)?)),
            }
        }
    })
}

/// The round ends because the caller's complete replan gave no plan.
fn replanning_stopped(reason: StopReason) -> NoRecovery {
    NoRecovery {
        error: format!("replanning stopped: {}", reason.as_str()),
        interrupted: reason == StopReason::Interrupted,
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

/// What each failed tool step's tool answered (its error), for a complete replan's
/// request context: the note names them too, for the model to read.
fn failed_tools(plan: &ValidatedPlan, result: &RunResult) -> Vec<ToolResultRef> {
    result
        .tasks
        .iter()
        .enumerate()
        .take(plan.len())
        .filter(|(_, t)| t.status == TaskStatus::Failed)
        .filter_map(|(i, t)| {
            let tool = plan.task(i).tool.as_deref()?.trim();
            (!tool.is_empty()).then(|| ToolResultRef {
                tool: tool.to_owned(),
                output: t.error.clone().unwrap_or_default(),
                is_error: true,
            })
        })
        .collect()
}

/// What a complete replan is told about the plan that failed. A failed tool step names its
/// tool, so a step plan's planner knows which tool to avoid or call otherwise (a tool's
/// error need not name it: a crashed server's does not).
fn failure_note(
    cx: &LoopContext,
    lang: Lang,
    plan: &ValidatedPlan,
    result: &RunResult,
) -> Result<String, PromptError> {
    let failed: Vec<String> = result
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.status == TaskStatus::Failed)
        .map(|(i, t)| {
            let error = t.error.as_deref().unwrap_or("?");
            let tool = (i < plan.len())
                .then(|| plan.task(i).tool.as_deref())
                .flatten()
                .map(str::trim)
                .filter(|tool| !tool.is_empty());
            match tool {
                Some(tool) => format!("{} (tool {tool}: {error})", t.description),
                None => format!("{} ({error})", t.description),
            }
        })
        .collect();
    cx.templates
        .failure_note(lang, &FailureNoteVars { failed: &failed })
}
