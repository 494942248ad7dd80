//! One structured question to the model with repair: ask, judge the answer, and while it is
//! invalid send the problems back (answer_repair.j2), up to a number of attempts. The same
//! loop serves the evaluator, the reflector and the partial replanner.

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmProvider, RequestContext, Usage};
use planwave_plan::Lang;
use planwave_prompts::{AnswerRepairVars, PromptError, Templates};
use serde::Serialize;

/// One attempt, as recorded in `evaluation.json` / `reflection.json`.
#[derive(Clone, Debug, Serialize)]
pub struct AskAttempt {
    pub attempt: u32,
    /// `ask` for the first request, `repair` for a follow-up.
    pub kind: &'static str,
    #[serde(serialize_with = "planwave_engine::timefmt::serialize")]
    pub started_at: DateTime<Utc>,
    pub duration_ms: f64,
    pub model: String,
    pub usage: Usage,
    pub problems: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub valid: bool,
    /// The model's text as received.
    pub raw: String,
}

/// The validated answer, if any attempt gave one, and every attempt.
#[derive(Debug)]
pub struct Asked<T> {
    pub value: Option<T>,
    pub attempts: Vec<AskAttempt>,
}

impl AskAttempt {
    /// As a `run.json` `calls[]` record.
    pub fn call_record(&self, role: AgentRole) -> planwave_engine::CallRecord {
        planwave_engine::CallRecord {
            role: role.as_str().into(),
            task: None,
            model: self.model.clone(),
            attempt: self.attempt,
            started_at: self.started_at,
            duration_ms: self.duration_ms,
            prompt_tokens: self.usage.prompt_tokens,
            completion_tokens: self.usage.completion_tokens,
            reasoning_tokens: self.usage.reasoning_tokens,
            outcome: if self.error.is_some() { "error" } else { "ok" }.into(),
            error: self.error.clone(),
        }
    }
}

impl<T> Asked<T> {
    pub fn call_records(&self, role: AgentRole) -> Vec<planwave_engine::CallRecord> {
        self.attempts.iter().map(|a| a.call_record(role)).collect()
    }

    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for a in &self.attempts {
            u += a.usage;
        }
        u
    }

    /// Why there is no value: the last attempt's error or problems.
    pub fn why_not(&self) -> String {
        match self.attempts.last() {
            None => "no attempt was made".into(),
            Some(a) => match &a.error {
                Some(e) => format!("the model call failed: {e}"),
                None => format!(
                    "no valid answer after {} attempt(s): {}",
                    self.attempts.len(),
                    a.problems.join("; ")
                ),
            },
        }
    }
}

pub struct Question<'a, T> {
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
    q: Question<'_, T>,
) -> Result<Asked<T>, PromptError> {
    let mut attempts = Vec::new();
    let mut to_repair: Option<(String, Vec<String>)> = None;
    for n in 1..=q.attempts.max(1) {
        let (messages, kind) = match &to_repair {
            Some((raw, problems)) => {
                let mut m = q.messages.clone();
                m.push(ChatMessage::assistant(raw.clone()));
                m.push(ChatMessage::user(templates.answer_repair(
                    q.lang,
                    &AnswerRepairVars {
                        what: q.what,
                        attempt: n,
                        problems,
                    },
                )?));
                (m, "repair")
            }
            None => (q.messages.clone(), "ask"),
        };
        let started_at = Utc::now();
        let t0 = Instant::now();
        let answer = provider
            .chat(ChatRequest {
                role: q.role,
                messages,
                attempt: n,
                context: q.context.clone(),
                traceparent: None,
                tools: Vec::new(),
            })
            .await;
        let mut a = AskAttempt {
            attempt: n,
            kind,
            started_at,
            duration_ms: t0.elapsed().as_secs_f64() * 1000.0,
            model: provider.info().model,
            usage: Usage::default(),
            problems: Vec::new(),
            error: None,
            valid: false,
            raw: String::new(),
        };
        let resp = match answer {
            Ok(r) => r,
            Err(e) => {
                a.error = Some(e.to_string());
                attempts.push(a);
                if e.is_retryable() {
                    continue;
                }
                return Ok(Asked {
                    value: None,
                    attempts,
                });
            }
        };
        a.model = resp.model;
        a.usage = resp.usage;
        a.raw = resp.content;
        match (q.judge)(&a.raw) {
            Ok(v) => {
                a.valid = true;
                attempts.push(a);
                return Ok(Asked {
                    value: Some(v),
                    attempts,
                });
            }
            Err(problems) => {
                tracing::info!(
                    role = q.role.as_str(),
                    attempt = n,
                    ?problems,
                    "invalid answer"
                );
                a.problems = problems.clone();
                to_repair = Some((a.raw.clone(), problems));
                attempts.push(a);
            }
        }
    }
    Ok(Asked {
        value: None,
        attempts,
    })
}
