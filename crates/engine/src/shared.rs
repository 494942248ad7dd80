//! What every actor of one run reads, behind one `Arc` so spawning a subagent is cheap. It is
//! read-only: what the run learns (records, sections, results, model calls) is the
//! supervisor's alone, and reaches it by message.

use std::sync::Arc;

use planwave_mcp::McpRegistry;

use planwave_llm::LlmProvider;
use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventKind, EventSink};
use planwave_storage::{Ack, Journal, RunDir};

use crate::config::RunConfig;
use planwave_prompts::PromptSet;

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
    /// MCP tools, when the run has any.
    pub mcp: Option<Arc<McpRegistry>>,
    /// The caller's span when the run started (the CLI's `run` root): parent of the task
    /// and `integrate` spans, which are created on actor tasks that do not inherit it.
    pub span: tracing::Span,
}

impl RunShared {
    /// Whether anything listens to events (the journal or a sink): when not, callers on the
    /// hot path skip building them.
    pub fn wants_events(&self) -> bool {
        self.journal.is_some() || self.sink.enabled()
    }

    pub fn emit(&self, kind: EventKind) {
        if self.wants_events() {
            self.emit_event(Event::now(kind));
        }
    }

    /// [`RunShared::emit`] with the event's time given (a model call's record has the same).
    pub fn emit_at(&self, ts: chrono::DateTime<chrono::Utc>, kind: EventKind) {
        if self.wants_events() {
            self.emit_event(Event { ts, kind });
        }
    }

    fn emit_event(&self, event: Event) {
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

    /// Hands an event to the non-durable sinks (progress, tracing).
    pub fn publish(&self, event: Event) {
        self.sink.emit(&event);
    }
}
