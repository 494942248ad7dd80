//! A partial replan (`replan_from_failure`): the planner asked for replacements of the failed
//! tasks, merged into the kept ones, and what was asked kept in the round's files.

use planwave_llm::{AgentRole, RequestContext};
use planwave_plan::{Lang, PlanFormat, ValidatedPlan};
use planwave_prompts::{ReplanStepsVars, ReplanTask, ReplanVars};
use planwave_record::{RoundTag, RunResult};
use serde_json::json;

use super::asking::interruptible;
use super::rounds::{LoopContext, LoopError, Rounds};
use crate::ask::{LoopQuestion, ask, with_raw};
use crate::{replan, replan_steps};

/// Asks the planner for replacements of the failed tasks and their blocked descendants;
/// `Ok(Err(why))` when no valid replacement came back.
pub(super) async fn replacement<R: Rounds>(
    cx: &LoopContext,
    driver: &mut R,
    plan: &ValidatedPlan,
    result: &RunResult,
    tag: RoundTag,
    analysis: Option<&str>,
) -> Result<Result<ValidatedPlan, String>, LoopError<R::Error>> {
    let lang = plan.lang();
    let steps = plan.spec().format == PlanFormat::Steps;
    let (kept, replace) = replan::split(plan, &result.tasks);
    let step_split = steps.then(|| replan_steps::split(plan, &result.tasks, &result.sections));
    let (messages, context) = match &step_split {
        // A step plan is replanned in steps, with the catalogue the step planner saw.
        Some((kept_steps, replace_steps)) => (
            cx.templates.replan_steps(
                lang,
                &ReplanStepsVars {
                    goal: &cx.goal,
                    tools: &cx.tools,
                    kept: kept_steps,
                    replace: replace_steps,
                    analysis,
                },
            )?,
            RequestContext {
                plan_format: Some(PlanFormat::Steps),
                tools: replan_steps::tool_refs(&cx.tools),
                tool_results: replan_steps::tool_results(kept_steps, replace_steps),
                ..context(cx, lang, &kept, &replace, tag)
            },
        ),
        None => (
            cx.templates.replan(
                lang,
                &ReplanVars {
                    goal: &cx.goal,
                    kept: &kept,
                    replace: &replace,
                    next_id: replan::next_id(plan),
                    analysis,
                },
            )?,
            context(cx, lang, &kept, &replace, tag),
        ),
    };
    // The merged plan is one the model wrote: within the task limit, or the size of the
    // plan it replaces when that was given larger.
    let limit = cx.task_limit.max(plan.len());
    let judge = |raw: &str| {
        let merged = if steps {
            replan_steps::merge(plan, &result.tasks, &cx.tools, raw)
        } else {
            replan::merge(plan, &result.tasks, raw)
        }?;
        match merged.len() {
            n if n > limit => Err(vec![format!(
                "with the replacements the plan has {n} tasks; at most {limit} are allowed (--max-tasks): replace the failed tasks with fewer"
            )]),
            _ => Ok(merged),
        }
    };
    let asked = interruptible(
        cx,
        ask(
            &cx.provider,
            &cx.templates,
            LoopQuestion {
                role: AgentRole::Planner,
                lang,
                messages,
                context,
                what: if steps {
                    "replacement steps"
                } else {
                    "replacement tasks"
                },
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

/// The request's structured context: kept and replaced tasks as sections (the simulator
/// answers from it).
fn context(
    cx: &LoopContext,
    lang: Lang,
    kept: &[ReplanTask],
    replace: &[ReplanTask],
    tag: RoundTag,
) -> RequestContext {
    RequestContext {
        lang,
        topic: cx.goal.clone(),
        sections: replan::context_sections(kept, replace),
        round: Some(tag),
        ..RequestContext::default()
    }
}
