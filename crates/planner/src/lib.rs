//! From a goal to a valid plan: render the planning prompt, ask the model (role `planner`),
//! parse its answer with the tolerant parser, validate it, and while it is invalid send the
//! problems back for a corrected plan. Every attempt is returned with its raw text, usage and
//! problems, so a run can show exactly how its plan came to be.
//!
//! The plan's JSON Schema is generated here from Rust types ([`schema`]) and used both in
//! the prompt and (through the HTTP client's settings) in `response_format`.
//!
//! [`ask`] is the ask-with-repair loop itself, shared with the reflective loop's evaluator,
//! reflector and partial replanner; [`Attempt`] is the one record of each try.
//!
//! This crate knows nothing of files, actors or the command line.

mod ask;
mod planner;
pub mod schema;
pub mod shorter;

pub use ask::{Asked, Attempt, AttemptKind, Judged, Question, WithRaw, ask};
pub use planner::{
    DEFAULT_TASK_LIMIT, Fallback, PlanOutcome, Planner, PlannerConfig, PlannerError, PlanningFailed,
};
pub use schema::{plan_schema, plan_schema_for, plan_schema_text, plan_schema_text_for};

#[cfg(test)]
mod tests;
