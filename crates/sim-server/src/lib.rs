//! The simulated LLM served over HTTP as an OpenAI-compatible API (`planwave sim-llm serve`):
//! `POST /v1/chat/completions` (SSE streaming or one JSON body), `POST /v1/completions` and
//! `POST /v1/embeddings`, `GET /v1/models`, and vLLM's
//! `GET /health` and `GET /metrics` (Prometheus text under vLLM's series names), with
//! fault injection (429 with `Retry-After`, 500, slow first byte, stalled stream, malformed
//! body, truncated stream, 401).
//!
//! Tests and load tests point the real HTTP client at it, so everything between the engine
//! and the socket is the code users run. It learns what a request is about from the optional
//! `x-planwave-*` headers the client sends (see `planwave_llm::openai::context_header`);
//! without them it answers from the last user message, as a generic model would.
//!
//! As a realistic endpoint it streams at the simulator's token rate (with jitter), charges a
//! prefill time per prompt token, admits a limited number of answers at once (the rest
//! queue), and measures its own queue wait and time to first token per answer
//! (`/planwave/stats` → `serving`, the simulator's own [`planwave_sim::ServerStats`]), so a
//! load tester's client-side figures can be checked;
//! `/planwave/arrivals` says when each request was received, so a client's rate limits can
//! be checked as the provider counts.
//! With a prefix cache (`SimConfig::prefix_cache`) repeated prompt prefixes are cached by
//! token blocks: prefill is charged for the uncached part only and usage reports the cached
//! tokens.
//!
//! The Batch API (`/v1/files`, `/v1/batches`) is simulated too (`batch/`), with a completion
//! delay, injected line errors, expiry and partial completion, and counts per `custom_id`
//! at `GET /planwave/batch-stats`.
//!
//! [`ServeOptions`] is what a front end sets (the simulated model's configuration, built from
//! the job spec's simulator options as a job's is, and the serving's plain numbers, checked
//! into a [`SimServerConfig`]). This crate knows nothing of plans or actors; the command line is
//! only in module `cli` (`planwave sim-llm`'s flags, behind the `cli` feature the binary
//! enables).

mod arrivals;
mod batch;
#[cfg(feature = "cli")]
pub mod cli;
mod completions;
mod embeddings;
mod faults;
mod metrics;
mod options;
mod prefix;
mod server;
mod serving;
mod stream;
mod wire;

pub use arrivals::{Arrival, ArrivalLog, Second};
pub use batch::{BatchSimConfig, BatchStats};
pub use faults::{Fault, FaultConfig, FaultRates};
pub use options::{OptionError, PrefixCacheOptions, ServeOptions};
pub use server::{SimServer, SimServerConfig, router};
pub use serving::ServingConfig;
