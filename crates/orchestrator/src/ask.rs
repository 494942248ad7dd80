//! The reflective loop's questions (evaluator, reflector, partial replanner) through the
//! planner's ask-with-repair loop: a follow-up names the previous answer's problems
//! (answer_repair.j2), and every attempt is one [`Attempt`] record.

use std::sync::Arc;

use planwave_llm::{AgentRole, ChatMessage, LlmProvider, RequestContext};
use planwave_plan::Lang;
use planwave_planner::{AttemptKind, Judged};
use planwave_prompts::{AnswerRepairVars, PromptError, Templates};

pub use planwave_planner::{Asked, Attempt};

pub struct LoopQuestion<'a, T> {
    pub role: AgentRole,
    pub lang: Lang,
    pub messages: Vec<ChatMessage>,
    pub context: RequestContext,
    /// What is asked for, in the prompt's language (for the repair message).
    pub what: &'a str,
    pub attempts: u32,
    pub judge: &'a (dyn Fn(&str) -> Result<T, Vec<String>> + Sync),
}

pub async fn ask<T>(
    provider: &Arc<dyn LlmProvider>,
    templates: &Templates,
    q: LoopQuestion<'_, T>,
) -> Result<Asked<T>, PromptError> {
    let (lang, what) = (q.lang, q.what);
    let repair = |n: u32, problems: &[String]| {
        templates.answer_repair(
            lang,
            &AnswerRepairVars {
                what,
                attempt: n,
                problems,
            },
        )
    };
    let judge = |raw: &str| -> Judged<T> { (q.judge)(raw).map(|v| (v, Vec::new())) };
    planwave_planner::ask(
        provider,
        planwave_planner::Question {
            role: q.role,
            messages: q.messages,
            first: AttemptKind::Ask,
            context: q.context,
            attempts: q.attempts,
            repair: &repair,
            judge: &judge,
            span: &|_, _| tracing::Span::none(),
            record: &|_, _| {},
            on_delta: None,
            shorter: None,
        },
        &mut |_| {},
    )
    .await
}

/// The attempts as the loop's answer files keep them: with each raw answer inline.
pub fn with_raw(attempts: &[Attempt]) -> Vec<planwave_planner::WithRaw<'_>> {
    attempts.iter().map(Attempt::with_raw).collect()
}
