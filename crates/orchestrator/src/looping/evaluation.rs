//! Evaluating a round: what the evaluator is shown of it, its answer kept in the round's
//! record, and the `evaluation` event.

use planwave_llm::{AgentRole, RequestContext, SectionRef};
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::{EvaluatorVars, RoundSection, RoundStats};
use planwave_record::{EventKind, RoundTag, RunResult};

use super::asking::ask_and_keep;
use super::records::RoundRecord;
use super::rounds::{LoopContext, LoopError, Rounds};
use crate::ask::LoopQuestion;
use crate::judge::parse_evaluation;
use crate::model::Evaluation;
use crate::policy::StopReason;

/// Section text given to the evaluator, per section, in characters.
const EVAL_SECTION_CHARS: usize = 2_000;

pub(super) fn round_sections(
    plan: &ValidatedPlan,
    result: &RunResult,
    with_text: bool,
) -> Vec<RoundSection> {
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

/// The round's evaluation (kept in the record) and the request context the reflection
/// reuses, or why the loop stops here.
type Evaluated = Result<(Evaluation, RequestContext), StopReason>;

pub(super) async fn evaluate<R: Rounds>(
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
        answer_schema: Some(crate::schemas::evaluation()),
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
