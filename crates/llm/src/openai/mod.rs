//! The OpenAI-compatible HTTP provider: client, SSE decoding, retries, the shared limiter,
//! and the optional context headers the HTTP simulator reads.

mod chunk;
mod client;
mod config;
pub mod context_header;
mod endpoint;
mod format;
mod gate;
mod limiter;
mod retry;
pub mod sse;
pub(crate) mod wire;

pub use client::{ClientStats, OpenAiProvider, RetryCause};
pub use config::{OpenAiConfig, ResponseFormatMode, RoleModels, Timeouts, provider_label};
pub(crate) use endpoint::endpoint;
pub(crate) use format::response_format;
pub use gate::{AdmittedAttempt, AttemptGate};
pub use limiter::{LimitConfig, LimitPermit, Limiter};
pub use retry::{
    RecordingSleeper, RetryBudget, RetryConfig, Sleeper, TokioSleeper, backoff_delay,
    parse_retry_after,
};
