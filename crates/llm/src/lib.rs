//! Language-model access for planwave: the [`LlmProvider`] trait every model sits behind, the
//! request/response types, the OpenAI-compatible HTTP client ([`openai::OpenAiProvider`]),
//! the same client through the provider's Batch API ([`batch::BatchProvider`]),
//! [`TracedProvider`] (a GenAI `chat` span around any provider's calls), and what every
//! provider shares: token estimates, prices, [`stable_hash`].
//!
//! Callers (planner, subagents, integrator) build [`ChatRequest`]s; they never know which
//! provider answers. The simulated provider lives in `planwave-sim`, behind the same trait.
//!
//! This crate knows nothing of the simulator, actors, run directories, config files or the
//! CLI; URL credentials are redacted by `planwave-redact`.

pub mod batch;
mod error;
mod hash;
pub mod openai;
mod pricing;
mod provider;
mod record;
mod secret;
mod stream;
pub mod timefmt;
mod tokens;
mod traced;
mod types;

pub use error::LlmError;
pub use hash::stable_hash;
pub use pricing::{CostEstimate, ModelPrice, PriceTable};
pub use provider::{ChatCall, LlmProvider, ProviderInfo};
pub use record::CallRecord;
pub use secret::{ApiKey, scrub};
pub use stream::{CallTiming, DeltaSink, StreamEvent};
pub use tokens::{char_count, char_tokens, estimate_tokens, is_cjk};
pub use traced::TracedProvider;
pub use types::{
    AgentRole, ChatMessage, ChatRequest, ChatResponse, FunctionCall, MessageRole, RequestContext,
    RoundTag, SectionRef, ToolCall, ToolRef, ToolResultRef, ToolSpec, Usage,
};
