//! Language-model access for planwave: the [`LlmProvider`] trait every model sits behind, the
//! request/response types, the OpenAI-compatible HTTP client ([`openai::OpenAiProvider`]) and
//! the deterministic simulated provider ([`sim::SimProvider`]).
//!
//! Callers (planner, subagents, integrator) build [`ChatRequest`]s; they never know which
//! provider answers. The simulator is a real provider behind the same trait, used for offline
//! runs and load tests, not a shortcut around the code users run.
//!
//! This crate knows nothing of actors, run directories, config files or the CLI.

mod error;
pub mod openai;
mod pricing;
mod provider;
mod record;
mod secret;
pub mod sim;
mod stream;
pub mod timefmt;
mod tokens;
mod types;
mod url_secret;

pub use error::LlmError;
pub use pricing::{CostEstimate, ModelPrice, PriceTable};
pub use provider::{LlmProvider, ProviderInfo};
pub use record::CallRecord;
pub use secret::{ApiKey, scrub};
pub use stream::{CallTiming, DeltaSink, StreamEvent};
pub use tokens::{char_count, char_tokens, estimate_tokens, is_cjk};
pub use types::{
    AgentRole, ChatMessage, ChatRequest, ChatResponse, FunctionCall, MessageRole, RequestContext,
    RoundTag, SectionRef, ToolCall, ToolRef, ToolResultRef, ToolSpec, Usage,
};
pub use url_secret::{redact_url, redact_urls_in, url_has_secret};
