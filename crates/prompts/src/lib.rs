//! Prompt templates: minijinja templates for the planner, plan repair, subagents, the
//! integrator and the reflective loop (evaluator, reflector, partial replan, answer repair),
//! in Chinese and English.
//!
//! The defaults are the files under the repository's `prompts/{zh,en}/`, compiled in with
//! `include_str!`; a directory given by `--prompts DIR` overrides them file by file. Every
//! template is test-rendered when loaded, so a broken override fails before any model call.
//! [`Templates`] implements the engine's [`PromptSet`](planwave_engine::PromptSet) and
//! renders the planner's prompts.
//!
//! This crate knows nothing of HTTP, actors or the command line.

mod reflect;
mod render;
mod templates;

pub use reflect::{
    AnswerRepairVars, EvaluatorVars, ReflectorVars, ReplanTask, ReplanVars, RoundSection,
    RoundStats,
};
pub use render::{PlannerVars, RepairVars, ToolInfo};
pub use templates::{PromptError, TEMPLATE_NAMES, Templates};
