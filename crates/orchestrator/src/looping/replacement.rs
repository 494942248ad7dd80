//! A partial replan (`replan_from_failure`): the planner asked for replacements of the failed
//! tasks, merged into the kept ones, and what was asked kept in the round's files.

use planwave_llm::{AgentRole, RequestContext, RoundTag};
use planwave_plan::ValidatedPlan;
use planwave_prompts::ReplanVars;
use planwave_record::RunResult;
use serde_json::json;

use super::asking::interruptible;
use super::rounds::{LoopContext, LoopError, Rounds};
use crate::ask::{LoopQuestion, ask, with_raw};
use crate::replan;

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
