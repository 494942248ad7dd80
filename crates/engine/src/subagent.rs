//! The subagent actor: writes one task's section with the model, retrying transient errors,
//! reports how its task ended to the supervisor, and stops.
//!
//! Its one job runs in `post_start`, on the actor's own task: a kill from the supervisor
//! (cancellation, a task dropped by a rebuilt plan) drops the job at once, model call and
//! all, and a panic in it fails the actor, which ractor hands to the supervisor as
//! `ActorFailed` with the panic's message. It hears no messages. When the job is done it
//! sends its report to the supervisor and stops with the reason [`REPORTED`]; the supervisor
//! reads how a subagent ended from that stop event or its report, never from its state.

use std::sync::Arc;
use std::time::Duration;

use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmError, RequestContext};
use planwave_record::{EventKind, SectionCut, SectionWarning};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::Value;
use tracing::Instrument;

use crate::calls::TaskCalls;
use crate::config::RetryPolicy;
use crate::context;
use crate::messages::{REPORTED, SubagentReport, SupervisorMsg, TaskFailure};
use crate::shared::RunShared;
use planwave_prompts::{AnswerForm, PriorSection, TaskText, subagent_context};

pub(crate) struct Subagent;

pub(crate) struct SubagentArgs {
    pub shared: Arc<RunShared>,
    pub index: usize,
    /// Sections of the direct prerequisites, in the order the task lists them.
    pub prior: Vec<(usize, Arc<str>)>,
    /// The results of the earlier tasks its parameters reference (a tool step's
    /// `{{ID.result}}`), by task index: handed over by the supervisor, which keeps them.
    pub results: Vec<(usize, Value)>,
    /// Where the report goes.
    pub supervisor: ActorRef<SupervisorMsg>,
    /// The task's span: model calls made while writing the section are its children.
    pub span: tracing::Span,
    /// The supervisor's plan generation when this subagent started (its `index` is that
    /// generation's).
    pub generation: u32,
}

impl Actor for Subagent {
    /// It hears nothing: its work is its start.
    type Msg = ();
    type State = SubagentArgs;
    type Arguments = SubagentArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<()>,
        args: SubagentArgs,
    ) -> Result<SubagentArgs, ActorProcessingErr> {
        // Runs inside the supervisor's turn (ractor awaits pre_start at spawn): nothing to do
        // but keep the arguments; the work starts on the actor's own task.
        Ok(args)
    }

    async fn post_start(
        &self,
        myself: ActorRef<()>,
        args: &mut SubagentArgs,
    ) -> Result<(), ActorProcessingErr> {
        let report = work(args).await;
        let _ = args
            .supervisor
            .send_message(SupervisorMsg::Ended(args.generation, Box::new(report)));
        myself.stop(Some(REPORTED.to_owned()));
        Ok(())
    }
}

/// The section written (or why not), its file in place: the subagent's report.
async fn work(state: &SubagentArgs) -> SubagentReport {
    // A batch caps subagents across all its runs; the permit is held until the report.
    let _slot = match &state.shared.slots {
        Some(s) => s.clone().acquire().await,
        None => None,
    };
    // Nothing is kept here across the section's wait but what `write_section` keeps: the
    // report is handed on as it comes back (a report held across the write below took a
    // slot in every subagent's future for the whole model call).
    let report = match state.shared.config.task_timeout {
        None => write_section(state).instrument(state.span.clone()).await,
        // Boxed: the timer would grow every subagent's future, and a time limit is rare.
        Some(limit) => Box::pin(write_section_within(state, limit)).await,
    };
    write_file(state, report).await
}

/// [`write_section`] within `--task-timeout`: past it, a report of the timeout.
async fn write_section_within(state: &SubagentArgs, limit: Duration) -> SubagentReport {
    let writing = write_section(state).instrument(state.span.clone());
    match tokio::time::timeout(limit, writing).await {
        Ok(r) => r,
        // The calls made before the limit reach the supervisor as the task's calls are
        // dropped (see `TaskCalls`).
        // Slow, not wrong: a later pass may well finish in time.
        Err(_) => SubagentReport::failed(
            state.index,
            TaskFailure::Transient(format!(
                "task timed out after {:.1} s (--task-timeout)",
                limit.as_secs_f64()
            )),
        ),
    }
}

/// Checks the section's quality, writes its file (with a run directory) and records both in
/// the report.
///
/// Not an `async fn`, which would keep the report twice (its argument and the body's copy).
// Deliberately not an `async fn` (above): the async block captures the report once.
#[allow(clippy::manual_async_fn)]
fn write_file(
    state: &SubagentArgs,
    mut report: SubagentReport,
) -> impl Future<Output = SubagentReport> {
    async move {
        if let Ok(section) = &report.result {
            // After any set while writing it (a cut by the output cap).
            report
                .warnings
                .extend(crate::quality::section_warnings(section));
        }
        // The section file is in place before the supervisor hears of it, so a completion
        // always names a file that is there; it is not synced here: the journal commits the
        // text with the completion (one group-committed sync), and resume writes the file
        // back from it if a crash lost it.
        if let (Ok(text), Some(out)) = (&report.result, &state.shared.output) {
            let out = out.clone();
            let text = text.clone();
            let file = state.shared.section_files[state.index].clone();
            let written = tokio::task::spawn_blocking(move || {
                out.write_unsynced(&file, text.as_bytes())
                    .map(|()| planwave_storage::section_hash(&text))
                    .map_err(|e| e.to_string())
            })
            .await
            .unwrap_or_else(|e| Err(format!("section writer failed: {e}")));
            report.written = Some(written);
        }
        report
    }
}

/// A tool step: the tool runs directly, without a model, retried like a subagent's model
/// call (`retry_count` of the step, else `--retries`) while the failure may pass.
async fn tool_step(state: &SubagentArgs, mut calls: TaskCalls<'_>, tool: &str) -> SubagentReport {
    let index = state.index;
    let shared = &state.shared;
    let own = shared.plan.task(index).retry_count;
    let max_retries = own.unwrap_or(shared.config.retry.max_retries);
    let mut attempt = 0u32;
    let mut empty_refs = Vec::new();
    let mut kept_result = None;
    let step = crate::tool_step::Step {
        index,
        tool,
        explicit_retries: own.is_some(),
        results: &state.results,
    };
    let result = loop {
        attempt += 1;
        match crate::tool_step::run(&mut calls, &step, attempt).await {
            Ok(done) => {
                // The supervisor keeps the result for later references, read back from the
                // section and this (see `planwave_record::read_result`).
                kept_result = planwave_record::result_to_keep(&done.section, &done.json);
                empty_refs = done.empty_refs;
                break Ok(Arc::<str>::from(done.section));
            }
            Err(failed) if failed.retry && attempt <= max_retries => {
                let delay = backoff(
                    &shared.config.retry,
                    shared.config.seed,
                    &calls.task.to_string(),
                    attempt,
                    None,
                );
                shared.emit(EventKind::TaskRetry {
                    task: calls.task.clone(),
                    attempt,
                    error: failed.failure.into_message(),
                    delay_ms: delay.as_millis() as u64,
                });
                tokio::time::sleep(delay).await;
            }
            Err(failed) => break Err(failed.failure),
        }
    };
    // An `llm_call`'s results cut to the context budget.
    let cuts = std::mem::take(&mut calls.cuts);
    SubagentReport {
        empty_refs,
        kept_result,
        ..calls.report(index, attempt, cuts, result)
    }
}

/// The subagent's messages and request context within the context budget, and what was cut
/// to fit it.
fn prompt(state: &SubagentArgs) -> (Vec<ChatMessage>, RequestContext, Vec<SectionCut>) {
    let shared = &state.shared;
    let plan = &shared.plan;
    let index = state.index;
    let budget = shared.config.context_budget_tokens;
    let own = context::fit_own(plan.task(index), budget, plan.lang());
    let (fitted, section_cuts) = context::fit(
        &state.prior,
        |i| plan.id(i).clone(),
        budget.map(|b| b.saturating_sub(own.tokens)),
        plan.lang(),
    );
    let mut context_cut = own.cuts.clone();
    context_cut.extend(section_cuts);
    // Other subagents' sections are data to this one: the prompt cleans them as it places
    // them (`planwave_prompts::data`).
    let prior: Vec<PriorSection> = fitted
        .into_iter()
        .map(|(index, text)| PriorSection { index, text })
        .collect();
    // With tools under the JSON protocol, every answer is the protocol's object and the
    // section is its `content`: the prompt asks for it so, not for a section of its own.
    let json_protocol = shared.config.tool_protocol == crate::config::ToolProtocol::Json
        && shared.mcp.as_ref().is_some_and(|m| !m.tools().is_empty());
    let text = TaskText {
        description: &own.description,
        hints: &own.hints,
        form: if json_protocol {
            AnswerForm::JsonProtocol
        } else {
            AnswerForm::Section
        },
    };
    let messages = shared.prompts.subagent(plan, index, &text, &prior);
    let context = subagent_context(plan, index, &text, &prior);
    (messages, context, context_cut)
}

async fn write_section(state: &SubagentArgs) -> SubagentReport {
    let shared = &state.shared;
    let plan = &shared.plan;
    let index = state.index;
    let mut calls = TaskCalls::new(shared, plan.id(index).clone(), &state.supervisor);
    if let Some(tool) = plan.task(index).tool.as_deref() {
        // Boxed so model-only tasks do not carry the tool step's future size.
        return Box::pin(tool_step(state, calls, tool.trim())).await;
    }
    // Each attempt renders its prompt (the same text: `prompt` is pure) and moves it into
    // its request, so nothing of it is kept here while the call is in flight: with many
    // subagents waiting on the model, a kept copy (even an emptied slot for one, as an
    // `Option` held across the wait) was a large part of each one's memory.
    let mut context_cut = Vec::new();
    let max_retries = plan
        .task(index)
        .retry_count
        .unwrap_or(shared.config.retry.max_retries);
    let suggested = &plan.task(index).hints.suggested_tools;
    let mut attempt = 0u32;
    let result = loop {
        attempt += 1;
        calls.attempt = attempt;
        let (messages, mut context, cut) = prompt(state);
        // Dropped at once otherwise, so it is not kept through the call.
        if attempt == 1 {
            context_cut = cut;
        } else {
            drop(cut);
        }
        context.round = shared.config.round;
        let request = ChatRequest {
            role: AgentRole::Subagent,
            messages,
            attempt,
            context,
            traceparent: None,
            tools: Vec::new(),
            on_delta: None,
            max_tokens: None,
        };
        // The answer is consumed as it comes back and the error by the retry's event, so
        // neither takes a slot in this future through the call or the retry's wait.
        let answer = crate::tool_loop::converse(&mut calls, request, suggested).await;
        // In a block, so the error's slot ends before the wait.
        let delay = {
            let err = match section_of(shared, answer) {
                Ok(written) => break Ok(written),
                Err(err) => err,
            };
            if !err.is_retryable() {
                break Err(TaskFailure::Fatal(err.to_string()));
            }
            if attempt > max_retries {
                break Err(TaskFailure::Transient(err.to_string()));
            }
            announce_retry(&calls, attempt, err)
        };
        // Boxed: retries are rare, and the timer would grow every subagent's future.
        Box::pin(tokio::time::sleep(delay)).await;
    };
    context_cut.extend(std::mem::take(&mut calls.cuts));
    let (result, cut) = match result {
        Ok((section, cut)) => (Ok(section), cut),
        Err(e) => (Err(e), None),
    };
    let kept_result = match &result {
        Ok(section) => planwave_record::text_result_to_keep(section),
        Err(_) => None,
    };
    let mut report = calls.report(index, attempt, context_cut, result);
    report.kept_result = kept_result;
    if let Some(tokens) = cut {
        report.warnings.push(SectionWarning::Truncated { tokens });
    }
    report
}

/// The section in a model's answer, with its output tokens when the output cap cut it. An
/// empty or degenerate answer (a loop, leaked special tokens) is a transient error: the
/// task's retries ask again, and the task fails with the reason if they run out.
fn section_of(
    shared: &RunShared,
    answer: Result<planwave_llm::ChatResponse, LlmError>,
) -> Result<(Arc<str>, Option<u64>), LlmError> {
    let r = answer?;
    let problem = if r.content.trim().is_empty() {
        Some("the model returned an empty section".to_owned())
    } else {
        crate::degenerate::degenerate(&r.content)
    };
    if let Some(message) = problem {
        return Err(LlmError::Transient {
            provider: shared.provider.info().provider,
            model: r.model,
            message,
            retry_after: None,
        });
    }
    let cut = (r.finish_reason.as_deref() == Some("length")).then_some(r.usage.completion_tokens);
    Ok((Arc::<str>::from(r.content), cut))
}

/// The backoff before the next attempt after `err`, announced as a `task_retry` event.
fn announce_retry(calls: &TaskCalls<'_>, attempt: u32, err: LlmError) -> Duration {
    let shared = calls.shared;
    let delay = backoff(
        &shared.config.retry,
        shared.config.seed,
        &calls.task.to_string(),
        attempt,
        err.retry_after(),
    );
    shared.emit(EventKind::TaskRetry {
        task: calls.task.clone(),
        attempt,
        error: err.to_string(),
        delay_ms: delay.as_millis() as u64,
    });
    delay
}

/// Exponential backoff with full jitter, drawn from the run seed so seeded runs replay;
/// never shorter than the server's `Retry-After`.
pub fn backoff(
    policy: &RetryPolicy,
    seed: u64,
    key: &str,
    attempt: u32,
    retry_after: Option<Duration>,
) -> Duration {
    let exp = policy
        .base_backoff
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let ceiling = exp.min(policy.max_backoff);
    let frac =
        (planwave_record::stable_hash(seed, key, attempt) >> 11) as f64 / (1u64 << 53) as f64;
    let jittered = ceiling.mul_f64(frac);
    match retry_after {
        Some(ra) => jittered.max(ra),
        None => jittered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns.
    fn future_size<A, F: Future>(_: fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A subagent waiting on its model call holds its work's future (with the model call's
    /// own, boxed by the provider, beside it): at 100,000 subagents in flight every byte
    /// here is 100 KB. Grown by accident (an argument or a local kept across the call's
    /// await), this fails; grown on purpose, raise the bound and say why.
    #[test]
    fn a_waiting_subagent_s_work_stays_small() {
        let size = future_size(work);
        let args = std::mem::size_of::<SubagentArgs>();
        let calls = std::mem::size_of::<TaskCalls<'_>>();
        let report = std::mem::size_of::<SubagentReport>();
        // 616 B in a debug build at this commit.
        assert!(
            size <= 640,
            "work task {size} B (args {args} B, task calls {calls} B, report {report} B)"
        );
    }

    #[test]
    fn backoff_is_bounded_jittered_and_honours_retry_after() {
        let p = RetryPolicy {
            max_retries: 3,
            base_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(250),
        };
        for attempt in 1..6 {
            let d = backoff(&p, 1, "t", attempt, None);
            assert!(d <= Duration::from_millis(250), "attempt {attempt}: {d:?}");
        }
        assert_eq!(backoff(&p, 1, "t", 2, None), backoff(&p, 1, "t", 2, None));
        assert!(backoff(&p, 1, "t", 1, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
    }
}
