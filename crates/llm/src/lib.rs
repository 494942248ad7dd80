//! Language-model access for planwave: the [`LlmProvider`] trait every model sits behind, the
//! request/response types, the OpenAI-compatible HTTP client ([`openai::OpenAiProvider`]),
//! the same client through the provider's Batch API ([`batch::BatchProvider`]),
//! [`TracedProvider`] (a GenAI `chat` span around any provider's calls), and what every
//! provider shares: token estimates and prices.
//!
//! Callers (planner, subagents, integrator) build [`ChatRequest`]s; they never know which
//! provider answers. The simulated provider lives in `planwave-sim`, behind the same trait.
//!
//! What a call leaves behind as plain data (token counts, call records, who answered, the
//! round tag, the timestamp format and the stable hash) is `planwave-record`'s, so the crates
//! that only read and write run files build no HTTP client.
//!
//! This crate knows nothing of the simulator, actors, run directories, config files or the
//! CLI; URL credentials are redacted by `planwave-redact`.

pub mod batch;
mod budget;
mod caps;
mod error;
pub mod openai;
mod pricing;
mod provider;
mod schema_bounds;
mod secret;
mod stream;
mod tokens;
mod traced;
mod types;

pub use budget::{Budget, BudgetLimits, BudgetedProvider};
pub use caps::{CappedProvider, OutputCaps};
pub use error::LlmError;
pub use pricing::{ModelPrice, PriceTable};
pub use provider::{ChatCall, LlmProvider};
pub use schema_bounds::bound_schema;
pub use secret::{ApiKey, scrub};
pub use stream::{CallTiming, DeltaSink, ServerTimings, StreamEvent};
pub use tokens::{char_count, char_tokens, estimate_tokens, is_cjk};
pub use traced::TracedProvider;
pub use types::{
    AgentRole, AnswerSchema, ChatMessage, ChatRequest, ChatResponse, FunctionCall, MessageRole,
    RequestContext, SectionRef, ToolCall, ToolRef, ToolResultRef, ToolSpec,
};

/// For [`pass_provider_info_to!`]: the type it names, at a path that works in crates that do
/// not depend on `planwave-record` themselves.
#[doc(hidden)]
pub mod __private {
    pub use planwave_record::ProviderInfo;
}
