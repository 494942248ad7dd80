//! Spans of planwave runs, for OpenTelemetry: what the libraries put on their `tracing`
//! spans. Exporting them (OTLP) is `planwave-otlp`'s, which only the binary links, so the
//! engine and the MCP client build no exporter, tonic or blocking HTTP client.
//!
//! - [`spans`]: helpers the engine uses on its `tracing` spans (links between task spans,
//!   error status, W3C `traceparent`), so the engine never names an OpenTelemetry type.
//! - [`tool`]: `execute_tool` spans for MCP tool calls.
//! - [`provider`]: [`TracedProvider`], an [`LlmProvider`](planwave_llm::LlmProvider) wrapper
//!   that puts a GenAI `chat` span around every model call and sends its `traceparent`.
//!
//! This crate knows nothing of clap, actors, run directories or where traces are sent.

pub mod provider;
pub mod spans;
pub mod tool;

pub use provider::TracedProvider;
pub use spans::{LinkTarget, add_link, link_target, set_error, traceparent};
