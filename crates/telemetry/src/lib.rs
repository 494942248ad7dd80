//! OpenTelemetry traces of planwave runs.
//!
//! - [`settings`]: where traces go (`--otlp-endpoint`, `--otlp-protocol`, the standard
//!   `OTEL_EXPORTER_OTLP_*` and `OTEL_SERVICE_NAME` variables), resolved from flags and an
//!   environment map so it is testable without touching the process environment.
//! - [`export`]: the OTLP exporter (HTTP/protobuf with a blocking client, or gRPC over tonic)
//!   behind a `tracing` layer, and the [`Telemetry`] guard that flushes on every exit path.
//! - [`spans`]: helpers the engine uses on its `tracing` spans (links between task spans,
//!   error status, W3C `traceparent`), so the engine never names an OpenTelemetry type.
//! - [`tool`]: `execute_tool` spans for MCP tool calls.
//! - [`provider`]: [`TracedProvider`], an [`LlmProvider`](planwave_llm::LlmProvider) wrapper
//!   that puts a GenAI `chat` span around every model call and sends its `traceparent`.
//!
//! Every span planwave exports has a target starting with `planwave`; the export layer takes
//! nothing else (no ractor or HTTP library spans), whatever `RUST_LOG` says for stderr.
//! This crate knows nothing of clap, actors or run directories.

pub mod export;
pub mod provider;
pub mod settings;
pub mod spans;
pub mod tool;

pub use export::{Telemetry, TelemetryError};
pub use provider::TracedProvider;
pub use settings::{OtlpProtocol, OtlpSettings, SettingsError};
pub use spans::{LinkTarget, add_link, link_target, set_error, traceparent};
