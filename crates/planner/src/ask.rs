//! One structured question to the model with repair: ask, judge the answer, and while it is
//! invalid send the problems back, up to a number of attempts. The planner asks for plans
//! this way, and the reflective loop's evaluator, reflector and partial replanner for their
//! answers; every attempt is kept as one [`Attempt`] record.

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmError, LlmProvider, RequestContext};
use planwave_prompts::PromptError;
use planwave_record::{CallRecord, Usage, timefmt};
use serde::Serialize;
use tracing::{Instrument, Span};

/// What an attempt asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptKind {
    /// The planner's first request (or one after a failed call).
    Plan,
    /// The first request of any other question.
    Ask,
    /// A follow-up with the previous answer's problems.
    Repair,
}

impl AttemptKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptKind::Plan => "plan",
            AttemptKind::Ask => "ask",
            AttemptKind::Repair => "repair",
        }
    }
}

impl std::fmt::Display for AttemptKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt, as recorded in `planner/attempts.json`, `evaluation.json`,
/// `reflection.json` (the raw text goes beside it: see [`WithRaw`]).
#[derive(Clone, Debug, Serialize)]
pub struct Attempt {
    pub attempt: u32,
    pub kind: AttemptKind,
    #[serde(serialize_with = "timefmt::serialize")]
    pub started_at: DateTime<Utc>,
    pub duration_ms: f64,
    pub model: String,
    pub usage: Usage,
    /// Why this attempt's answer was rejected (empty for the valid one).
    pub problems: Vec<String>,
    /// Accepted but worth knowing (a plan's task count outside the default range...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The model call failed; no text to judge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The answer was cut by the output cap (`finish_reason: length`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    pub valid: bool,
    /// The model's text as received.
    #[serde(skip)]
    pub raw: String,
}

/// An attempt serialized with its raw text (the loop's answer files keep it inline).
#[derive(Serialize)]
pub struct WithRaw<'a> {
    #[serde(flatten)]
    pub attempt: &'a Attempt,
    pub raw: &'a str,
}

impl Attempt {
    /// As a `run.json` `calls[]` record.
    pub fn call_record(&self, role: AgentRole) -> CallRecord {
        CallRecord::ended(
            role.as_str(),
            self.model.clone(),
            self.attempt,
            self.started_at,
            self.duration_ms,
            &self.usage,
            self.error.clone(),
        )
    }

    pub fn with_raw(&self) -> WithRaw<'_> {
        WithRaw {
            attempt: self,
            raw: &self.raw,
        }
    }
}

/// The validated answer, if an attempt gave one, and every attempt.
#[derive(Debug)]
pub struct Asked<T> {
    pub value: Option<T>,
    pub attempts: Vec<Attempt>,
    /// A model error that is not worth another attempt (authentication, bad request): it
    /// ended the question early.
    pub fatal: Option<LlmError>,
}

impl<T> Asked<T> {
    pub fn call_records(&self, role: AgentRole) -> Vec<CallRecord> {
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

/// A judged answer: the value and what is worth knowing about it, or every problem.
pub type Judged<T> = Result<(T, Vec<String>), Vec<String>>;

/// A check's answer, awaited after an answer passed the judge (see [`Check`]).
pub type CheckFuture = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = Result<Vec<String>, crate::ValidatorFailed>>
            + Send
            + 'static,
    >,
>;

/// A further check of a judged value (a custom validator): its problems make the answer
/// invalid and go back for repair; its failure ends the question (no repair can fix it).
pub type Check<'a, T> = dyn Fn(&T) -> CheckFuture + Sync + 'a;

/// The follow-up message for attempt `n`, given the previous answer's problems.
pub type Repair<'a> = dyn Fn(u32, &[String]) -> Result<String, PromptError> + Sync + 'a;

pub struct Question<'a, T> {
    pub role: AgentRole,
    pub messages: Vec<ChatMessage>,
    /// The first request's kind ([`AttemptKind::Plan`] or [`AttemptKind::Ask`]).
    pub first: AttemptKind,
    pub context: RequestContext,
    /// Attempts in total, the first included.
    pub attempts: u32,
    pub repair: &'a Repair<'a>,
    pub judge: &'a (dyn Fn(&str) -> Judged<T> + Sync),
    /// Awaited on an answer the judge accepted, when given.
    pub check: Option<&'a Check<'a, T>>,
    /// The span an attempt's model call runs in (`Span::none()` for none).
    pub span: &'a (dyn Fn(u32, AttemptKind) -> Span + Sync),
    /// Records a judged attempt's outcome on its span.
    pub record: &'a (dyn Fn(&Span, &Attempt) + Sync),
    /// Receives the first attempt's answer as it streams (a repair's is not streamed: its
    /// plan replaces the first one whole).
    pub on_delta: Option<planwave_llm::DeltaSink>,
    /// The follow-up after an answer cut by the output cap, given the tokens it had: the
    /// question again, for a shorter answer (the cut one is not sent back). `None`: the
    /// generic [`crate::shorter::shorter_answer`].
    pub shorter: Option<&'a (dyn Fn(u64) -> String + Sync)>,
}

/// What the next attempt sends after an invalid answer.
enum Follow {
    /// The answer and its problems: the model corrects it.
    Repair(String, Vec<String>),
    /// The answer was cut after this many tokens: ask again for a shorter one.
    Shorter(u64),
}

/// The messages of attempt `n` and its kind: the question, or the question with the previous
/// answer and its repair, or asked again shorter after a cut.
fn next_messages<T>(
    q: &Question<'_, T>,
    n: u32,
    to_repair: Option<&Follow>,
) -> Result<(Vec<ChatMessage>, AttemptKind), PromptError> {
    Ok(match to_repair {
        Some(Follow::Repair(raw, problems)) => {
            let mut m = q.messages.clone();
            m.push(ChatMessage::assistant(raw.clone()));
            m.push(ChatMessage::user((q.repair)(n, problems)?));
            (m, AttemptKind::Repair)
        }
        Some(Follow::Shorter(tokens)) => {
            let mut m = q.messages.clone();
            m.push(ChatMessage::user(match q.shorter {
                Some(f) => f(*tokens),
                None => crate::shorter::shorter_answer(q.context.lang, *tokens),
            }));
            (m, AttemptKind::Repair)
        }
        None => (q.messages.clone(), q.first),
    })
}

/// An answer judged, then checked by the custom validator when there is one.
enum Judgement<T> {
    /// The value and its warnings, or the problems a repair should fix.
    Judged(Result<(T, Vec<String>), Vec<String>>),
    /// The validator itself failed (not the answer).
    CheckFailed(String),
}

async fn judge_and_check<T>(q: &Question<'_, T>, raw: &str) -> Judgement<T> {
    let (value, warnings) = match (q.judge)(raw) {
        Ok(judged) => judged,
        Err(problems) => return Judgement::Judged(Err(problems)),
    };
    let Some(check) = q.check else {
        return Judgement::Judged(Ok((value, warnings)));
    };
    match check(&value).await {
        Ok(problems) if problems.is_empty() => Judgement::Judged(Ok((value, warnings))),
        Ok(problems) => Judgement::Judged(Err(problems)),
        Err(failed) => Judgement::CheckFailed(failed.to_string()),
    }
}

/// Asks until an answer is valid, an error is not worth retrying, or the attempts run out;
/// `on_attempt` sees each attempt as soon as it is judged.
pub async fn ask<T>(
    provider: &Arc<dyn LlmProvider>,
    q: Question<'_, T>,
    on_attempt: &mut (dyn FnMut(&Attempt) + Send),
) -> Result<Asked<T>, PromptError> {
    let mut attempts = Vec::new();
    // The last answer judged invalid, with its problems: what a repair fixes.
    let mut to_repair: Option<Follow> = None;
    for n in 1..=q.attempts.max(1) {
        let (messages, kind) = next_messages(&q, n, to_repair.as_ref())?;
        let span = (q.span)(n, kind);
        let (mut a, answer) = call(provider, &q, n, kind, messages, &span).await;
        let resp = match answer {
            Ok(r) => r,
            Err(e) => {
                a.error = Some(e.to_string());
                (q.record)(&span, &a);
                on_attempt(&a);
                attempts.push(a);
                if e.is_retryable() {
                    continue;
                }
                return Ok(Asked {
                    value: None,
                    attempts,
                    fatal: Some(e),
                });
            }
        };
        a.model = resp.model;
        a.usage = resp.usage;
        a.raw = resp.content;
        a.truncated = resp.finish_reason.as_deref() == Some("length");
        let judged = match judge_and_check(&q, &a.raw).await {
            Judgement::Judged(judged) => judged,
            // The custom validator could not say: no repair can help.
            Judgement::CheckFailed(failed) => {
                a.problems = vec![failed];
                (q.record)(&span, &a);
                on_attempt(&a);
                attempts.push(a);
                return Ok(Asked {
                    value: None,
                    attempts,
                    fatal: None,
                });
            }
        };
        match judged {
            Ok((value, warnings)) => {
                a.valid = true;
                a.warnings = warnings;
                if a.truncated {
                    let tokens = a.usage.completion_tokens;
                    a.warnings
                        .push(crate::shorter::cut_problem(q.context.lang, tokens));
                }
                (q.record)(&span, &a);
                on_attempt(&a);
                attempts.push(a);
                return Ok(Asked {
                    value: Some(value),
                    attempts,
                    fatal: None,
                });
            }
            // Cut by the cap: that is the problem, whatever broken JSON it left.
            Err(_) if a.truncated => {
                let tokens = a.usage.completion_tokens;
                a.problems = vec![crate::shorter::cut_problem(q.context.lang, tokens)];
                (q.record)(&span, &a);
                on_attempt(&a);
                to_repair = Some(Follow::Shorter(tokens));
                attempts.push(a);
            }
            Err(problems) => {
                tracing::info!(
                    role = q.role.as_str(),
                    attempt = n,
                    ?problems,
                    "invalid answer"
                );
                a.problems = problems.clone();
                (q.record)(&span, &a);
                on_attempt(&a);
                to_repair = Some(Follow::Repair(a.raw.clone(), problems));
                attempts.push(a);
            }
        }
    }
    Ok(Asked {
        value: None,
        attempts,
        fatal: None,
    })
}

/// One model call in `span`, and the attempt record it starts.
async fn call<T>(
    provider: &Arc<dyn LlmProvider>,
    q: &Question<'_, T>,
    n: u32,
    kind: AttemptKind,
    messages: Vec<ChatMessage>,
    span: &Span,
) -> (Attempt, Result<planwave_llm::ChatResponse, LlmError>) {
    let started_at = timefmt::now();
    let t0 = Instant::now();
    let answer = provider
        .chat(ChatRequest {
            role: q.role,
            messages,
            attempt: n,
            context: q.context.clone(),
            traceparent: None,
            tools: Vec::new(),
            on_delta: if n == 1 { q.on_delta.clone() } else { None },
            max_tokens: None,
        })
        .instrument(span.clone())
        .await;
    let attempt = Attempt {
        attempt: n,
        kind,
        started_at,
        duration_ms: t0.elapsed().as_secs_f64() * 1000.0,
        model: provider.info().model,
        usage: Usage::default(),
        problems: Vec::new(),
        warnings: Vec::new(),
        error: None,
        truncated: false,
        valid: false,
        raw: String::new(),
    };
    (attempt, answer)
}
