//! What every actor of one run shares, behind one `Arc` so spawning a subagent is cheap.

use std::sync::{Arc, Mutex};

use planwave_mcp::McpRegistry;

use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventKind, EventSink};
use planwave_storage::{Ack, Journal, RunDir};

use crate::config::RunConfig;
use planwave_llm::CallRecord;
use planwave_prompts::PromptSet;

/// The model calls of a run (shared by the plans of a run whose plan streams).
pub type Calls = Arc<Mutex<Vec<CallRecord>>>;

pub struct RunShared {
    pub plan: Arc<ValidatedPlan>,
    pub provider: Arc<dyn LlmProvider>,
    pub prompts: Arc<dyn PromptSet>,
    pub sink: Arc<dyn EventSink>,
    /// The durable record (`events.jsonl`); every event goes here before the sink.
    pub journal: Option<Arc<Journal>>,
    /// Subagent slots shared across runs (a batch's `--max-subagents`).
    pub slots: Option<crate::Slots>,
    /// Where sections are written (by the subagents, durably, before they report).
    pub output: Option<RunDir>,
    /// `sections/<stem>.md` per task, in plan order.
    /// Section file names by task index; empty without an output directory.
    pub section_files: Arc<Vec<String>>,
    pub config: RunConfig,
    /// Every model call, taken from the `llm_call` events so no caller can forget one.
    pub calls: Calls,
    /// MCP tools, when the run has any.
    pub mcp: Option<Arc<McpRegistry>>,
    /// Each completed task's result as JSON (a tool's output, or a section as a string), for
    /// the `{{ID.result}}` references of later tool steps.
    pub results: crate::results::Results,
    /// The caller's span when the run started (the CLI's `run` root): parent of the task
    /// and `integrate` spans, which are created on actor tasks that do not inherit it.
    pub span: tracing::Span,
}

impl RunShared {
    /// Whether anything listens to task events (the journal or a sink): when not, callers on
    /// the hot path skip building them. Model-call events are always built (they feed the
    /// call records).
    pub fn wants_events(&self) -> bool {
        self.journal.is_some() || self.sink.enabled()
    }

    pub fn emit(&self, kind: EventKind) {
        if !matches!(kind, EventKind::LlmCall { .. }) && !self.wants_events() {
            return;
        }
        let event = Event::now(kind);
        if let Some(j) = &self.journal {
            j.append(event.clone(), None);
        }
        self.publish(event);
    }

    /// Journals `kind` and calls `ack` once it is durable (at once without a journal). The
    /// other sinks see the event only when [`RunShared::publish`] is called with it, after
    /// the acknowledgement, so nothing downstream learns of a state change a crash could undo.
    pub fn emit_durable(&self, kind: EventKind, ack: Ack) -> Event {
        let event = Event::now(kind);
        match &self.journal {
            Some(j) => j.append(event.clone(), Some(ack)),
            None => ack(Ok(())),
        }
        event
    }

    /// Hands an event to the non-durable sinks (progress, tracing) and the call records.
    pub fn publish(&self, event: Event) {
        if let EventKind::LlmCall {
            task,
            role,
            model,
            attempt,
            duration_ms,
            usage,
            error,
        } = &event.kind
            && let Ok(mut calls) = self.calls.lock()
        {
            calls.push(CallRecord {
                role: role.clone(),
                task: task.clone(),
                model: model.clone(),
                attempt: *attempt,
                started_at: event.ts
                    - chrono::Duration::microseconds((duration_ms * 1000.0) as i64),
                duration_ms: *duration_ms,
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
                reasoning_tokens: usage.reasoning_tokens,
                cached_tokens: usage.cached_tokens,
                cache_write_tokens: usage.cache_write_tokens,
                outcome: if error.is_some() { "error" } else { "ok" }.into(),
                error: error.clone(),
            });
        }
        self.sink.emit(&event);
    }

    pub fn take_calls(&self) -> Vec<CallRecord> {
        self.calls
            .lock()
            .map(|mut c| std::mem::take(&mut *c))
            .unwrap_or_default()
    }
}
