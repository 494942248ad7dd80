//! Spans of planwave runs, for OpenTelemetry: what the libraries put on their `tracing`
//! spans. Exporting them (OTLP) is `planwave-otlp`'s, which only the binary links, so the
//! engine and the MCP client build no exporter, tonic or blocking HTTP client.
//!
//! - [`spans`]: helpers the engine uses on its `tracing` spans (links between task spans,
//!   error status, W3C `traceparent`), so the engine never names an OpenTelemetry type.
//! - [`root`]: the root span `run` every executing command runs in, and how it ends.
//! - [`tool`]: `execute_tool` spans for MCP tool calls.
//!
//! The model client's `chat` spans are `planwave_llm::TracedProvider`'s, made with these
//! helpers. This crate depends on no other planwave crate (it names no model or MCP type) and
//! knows nothing of clap, actors, run directories or where traces are sent, so every library
//! can use it.

pub mod root;
pub mod spans;
pub mod tool;

pub use root::{end_root, root_span};
pub use spans::{LinkTarget, add_link, link_target, set_error, traceparent};
