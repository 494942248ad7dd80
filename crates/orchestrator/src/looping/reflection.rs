//! Reflecting: on a finished round (whether and what to replan, for the next round's
//! planner) and, with step-level reflection, on a pass's failed tasks (which recovery).

use planwave_llm::{AgentRole, RequestContext, SectionRef};
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::{FailedStep, ReflectorVars, StepReflectionVars};
use planwave_record::{EventKind, RoundTag, RunResult, TaskStatus};

use super::asking::ask_and_keep;
use super::evaluation::round_sections;
use super::records::RoundRecord;
use super::rounds::{LoopContext, LoopError, Rounds};
use crate::ask::LoopQuestion;
use crate::judge::{parse_reflection, parse_step_reflection};
use crate::model::{Evaluation, Reflection, StepReflection};
use crate::policy::{StopReason, Strategy};

/// The round's reflection (`should_replan` kept in the record), or why the loop stops here.
pub(super) async fn reflect<R: Rounds>(
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
    let context = RequestContext {
        answer_schema: Some(crate::schemas::reflection()),
        ..context
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

/// Step-level reflection: the reflector analyses the pass's failed tasks and
/// recommends one of `offered` (kept as `rounds/<k>/step-reflection-pass-<p>.json`).
/// `None` when no valid answer came (the rule's choice stands) or when interrupted.
pub(super) async fn step_reflect<R: Rounds>(
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
        answer_schema: Some(crate::schemas::step_reflection(offered)),
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
