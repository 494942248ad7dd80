//! The executor: runs a [`ValidatedPlan`](planwave_plan::ValidatedPlan) as concurrent LLM
//! subagents on ractor actors and assembles the report.
//!
//! [`execute`] is the entry point. A `supervisor` actor owns the run: it asks the pure
//! [`Scheduler`] which tasks are ready, spawns one `subagent` actor per task as soon as that
//! task's own prerequisites are done, and turns failures (including panics) into `failed` and
//! `blocked` task records. An `integrator` actor collects outcomes, writes section files as
//! they arrive, and renders the report (`planwave-report`).
//!
//! What a run produces is `planwave-record`'s ([`RunResult`](planwave_record::RunResult),
//! [`Event`](planwave_record::Event)); how its files become durable (run directory, journal,
//! replay, lock) is `planwave-storage`'s. This crate decides what runs when.
//!
//! This crate knows nothing of the command line, terminals or HTTP; it talks to models only
//! through [`planwave_llm::LlmProvider`] and reports progress only through
//! [`EventSink`](planwave_record::EventSink).

mod calls;
mod config;
mod context;
mod degenerate;
mod digest;
mod mcp_events;
mod quality;
mod run;
mod run_stream;
mod scheduler;
mod shared;
mod slots;
mod stream_plan;
mod task_spans;
mod tool_answer;
mod tool_loop;
mod tool_schema;
mod tool_step;

mod error;
mod integrator;
mod messages;
mod subagent;
mod supervisor;
#[cfg(test)]
mod tests;

pub use config::{
    DEFAULT_CONTEXT_BUDGET_TOKENS, DEFAULT_MAX_TOOL_ROUNDS, RetryPolicy, RunConfig, ToolProtocol,
};
pub use error::EngineError;
pub use planwave_prompts::PromptSet;
pub use planwave_prompts::data::is_hiding_char;
pub use quality::MIN_SECTION_CHARS;
pub use run::{RunRequest, execute};
pub use run_stream::{PlanFeed, execute_streaming};
pub use scheduler::Scheduler;
pub use slots::{SlotHeld, Slots, SubagentSlots};
pub use stream_plan::{Admission, keep_map};
