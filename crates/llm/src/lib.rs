//! Language-model access for planwave: the [`LlmProvider`] trait every model sits behind, the
//! request/response types, and the deterministic simulated provider ([`sim::SimProvider`]).
//!
//! Callers (planner, subagents, integrator) build [`ChatRequest`]s; they never know which
//! provider answers. The simulator is a real provider behind the same trait, used for offline
//! runs and load tests, not a shortcut around the code users run.
//!
//! This crate knows nothing of actors, run directories or the CLI.

mod error;
mod provider;
pub mod sim;
mod types;

pub use error::LlmError;
pub use provider::{LlmProvider, ProviderInfo};
pub use types::{
    AgentRole, ChatMessage, ChatRequest, ChatResponse, MessageRole, RequestContext, SectionRef,
    Usage,
};
