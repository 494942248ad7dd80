//! The research plan: its model, tolerant parsing, strict validation, and dependency waves.
//!
//! Plans move through typed stages: raw model output (`&[u8]`) -> [`PlanSpec`] (parsed by
//! [`parse_plan`], both seed formats normalized) -> [`ValidatedPlan`] (ids resolved, acyclic,
//! waves and critical path computed; it cannot be built invalid). [`WaveLayout`] names its
//! waves and critical path by task id.
//!
//! This crate is pure: it knows nothing of tokio, HTTP, actors or models. Every graph
//! algorithm is iterative, so a 100,000-task chain cannot overflow the stack.

pub mod clarification;
pub mod generate;
mod layout;
mod model;
mod parse;
pub mod refs;
mod tools;
mod validate;
mod validated;

pub use layout::WaveLayout;
pub use model::{
    CACHE_MATCH_KEY, FALLBACK_KEY, Hints, Lang, PlanAbout, PlanFormat, PlanSpec, TaskId, TaskSpec,
};
pub use parse::stream::{StreamedTask, TaskStream};
pub use parse::{ParseError, extract_json, parse_plan, parse_plan_str, plan_from_value};
pub use tools::{LLM_CALL, ToolCatalog};
pub use validate::{Problem, ValidationErrors, Warning};
pub use validated::ValidatedPlan;
