//! Prompt templates: minijinja templates for the planner, plan repair, subagents, the
//! integrator and the reflective loop (evaluator, reflector, partial replan, answer repair),
//! in Chinese and English.
//!
//! The defaults are the files under the repository's `prompts/{zh,en}/`, compiled in with
//! `include_str!`; a directory given by `--prompts DIR` overrides them file by file. Every
//! template is test-rendered when loaded, so a broken override fails before any model call.
//! [`PromptSet`] is what the engine asks of prompts; [`Templates`] implements it and renders
//! the planner's prompts. Prompt text lives only in those template files.
//!
//! Text planwave does not control (tool results, other tasks' sections, a step's result)
//! enters a prompt only through [`data`]: in a delimited block, cleaned, fit to the budget.
//!
//! This crate knows nothing of HTTP, actors, the engine or the command line.

mod clarify;
pub mod data;
mod emit;
mod reflect;
mod render;
mod set;
mod step;
mod templates;

pub use clarify::{ClarifyAnswer, ClarifyVars};
pub use reflect::{
    AnswerRepairVars, EvaluatorVars, FailedStep, FailureNoteVars, ReflectionSummaryVars,
    ReflectorVars, ReplanStep, ReplanStepsVars, ReplanTask, ReplanVars, RoundSection, RoundStats,
    StepReflectionVars,
};
pub use render::{MetaEntry, PlannerTool, PlannerVars, RepairVars};
pub use set::{
    AnswerForm, PriorSection, PromptSet, SectionSummary, TaskText, ToolListing, integrator_context,
    subagent_context,
};
pub use step::{StepData, StepPrompt, StepValue, step_prompt};
pub use templates::{PromptError, TEMPLATE_NAMES, Templates};
