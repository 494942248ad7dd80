//! The planner's side of clarifying questions: when the model may ask them, judging an
//! answer that is either a plan or questions, and the prompt's clarifying part.

use planwave_llm::ChatMessage;
use planwave_plan::{Lang, PlanFormat, ValidatedPlan};
use planwave_prompts::{ClarifyAnswer, ClarifyVars, PromptError};

use crate::Planner;
use crate::ask::Judged;
use crate::questions::read_questions;

/// What the planner's answer was.
pub(crate) enum Answer {
    Plan(Box<ValidatedPlan>),
    Questions(Vec<String>),
}

impl Planner {
    /// Whether this request may be answered with questions: allowed by the job, a research
    /// plan's first planning (no reflection), and not already answered.
    pub(crate) fn may_ask(&self, reflection: Option<&str>) -> bool {
        let c = self.config();
        c.questions
            && c.answers.is_empty()
            && c.format == PlanFormat::Research
            && reflection.is_none_or(|r| r.trim().is_empty())
    }

    /// A plan, or (when `ask`) questions; questions when they are not allowed are a problem
    /// to repair.
    pub(crate) fn judge_answer(&self, raw: &str, goal: &str, ask: bool) -> Judged<Answer> {
        match read_questions(raw) {
            Some(Ok(q)) if ask => Ok((Answer::Questions(q), Vec::new())),
            Some(Err(problems)) if ask => Err(problems),
            Some(_) => Err(vec![
                "the answer asks questions, but a plan is wanted: write the plan with what the goal and the answers say".into(),
            ]),
            None => self
                .judge(raw, goal)
                .map(|(plan, warnings)| (Answer::Plan(Box::new(plan)), warnings)),
        }
    }

    /// `messages` with the clarifying part (may the model ask; the answers so far) appended
    /// to the last user message, when there is one to add.
    pub(crate) fn with_clarifying(
        &self,
        mut messages: Vec<ChatMessage>,
        lang: Lang,
        ask: bool,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        let answers = &self.config().answers;
        if !ask && answers.is_empty() {
            return Ok(messages);
        }
        let text = self.templates().clarify(
            lang,
            &ClarifyVars {
                ask,
                answers: answers
                    .iter()
                    .map(|a| ClarifyAnswer {
                        question: a.question.as_deref(),
                        answer: &a.answer,
                    })
                    .collect(),
            },
        )?;
        if text.is_empty() {
            return Ok(messages);
        }
        match messages.last_mut() {
            Some(last) if last.role == planwave_llm::MessageRole::User => {
                last.content.push_str("\n\n");
                last.content.push_str(&text);
            }
            _ => messages.push(ChatMessage::user(text)),
        }
        Ok(messages)
    }
}
