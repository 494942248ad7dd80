//! The values a run produces: what `run.json` holds ([`RunResult`] with its [`TaskRecord`]s,
//! [`RunStats`] and [`RunStatus`]), the events of `events.jsonl` ([`Event`], [`EventKind`])
//! with the [`EventSink`] they are delivered through, and the pieces those carry
//! ([`SectionCut`], [`SectionWarning`], [`Schedule`], and [`Preset`], a task completed in an
//! earlier attempt). [`figures`](RunResult::usage_by_role) derives what `planwave show`
//! tabulates: times relative to the run's start, tokens per task and per role; [`Tally`] is
//! what a run's events add up to while it goes on; [`read_result`] and [`result_to_keep`]
//! say what a finished task's `{{ID.result}}` is and what of it its record keeps.
//!
//! What a model call leaves behind is here too, so reading a run needs no model client:
//! [`Usage`] (token counts), [`CallRecord`] (one call of `run.json` `calls[]`),
//! [`ProviderInfo`] (who answered), [`RoundTag`] (which round and pass of the reflective loop)
//! and [`CostEstimate`]. Two primitives every layer shares: [`timefmt`], the one timestamp
//! format of the run files, and [`stable_hash`], the FNV-1a hash behind seeded draws and
//! content-addressed names. `planwave-llm` depends on this crate, never the reverse.
//!
//! It sits below the engine that makes these values, the storage that writes and reads them
//! back (`planwave-storage`) and the report that draws them (`planwave-report`). A crate of
//! its own rather than part of storage: the report, and `planwave serve` drawing a run, need
//! the records but none of the file handling, fsync and writer threads; and storage needs
//! them without the engine. So no arrow runs back up and none of the three depends on
//! another for a type.
//!
//! It deliberately knows nothing of actors, files, threads, HTTP or rendering: plain data with
//! its serde form, which is the `run.json` and `events.jsonl` contract (docs/events.md), plus
//! the sinks that need no thread of their own and the two primitives above.

mod call;
mod cost;
mod cut;
mod event;
mod figures;
mod hash;
mod outcome;
mod preset;
mod provider;
mod round;
mod schedule;
mod step_result;
mod tally;
pub mod timefmt;
mod usage;
mod warning;

pub use call::CallRecord;
pub use cost::CostEstimate;
pub use cut::{CutPart, SectionCut};
pub use event::{Event, EventKind, EventSink, FanoutSink, NullSink, PREVIEW_CHARS, preview};
pub use figures::{RoleUsage, TaskTotals};
pub use hash::stable_hash;
pub use outcome::{
    CancelReason, FailureKind, PlanSource, RunResult, RunStats, RunStatus, TaskRecord, TaskStatus,
    ToolCallRecord,
};
pub use preset::Preset;
pub use provider::{ProviderInfo, ProviderInfoRecord};
pub use round::RoundTag;
pub use schedule::Schedule;
pub use step_result::{read_result, result_from_section, result_to_keep, text_result_to_keep};
pub use tally::Tally;
pub use usage::Usage;
pub use warning::SectionWarning;
