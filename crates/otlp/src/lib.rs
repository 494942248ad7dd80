//! Where planwave's traces go and how they get there; only the binary links this crate.
//!
//! - [`settings`]: where traces go (`--otlp-endpoint`, `--otlp-protocol`, the standard
//!   `OTEL_EXPORTER_OTLP_*` and `OTEL_SERVICE_NAME` variables), resolved from flags and an
//!   environment map so it is testable without touching the process environment.
//! - [`export`]: the OTLP exporter (HTTP/protobuf with a blocking client, or gRPC over tonic)
//!   behind a `tracing` layer, and the [`Telemetry`] guard that flushes on every exit path.
//! - [`subscriber`]: [`install`], the process's subscriber: stderr log lines (`-v`,
//!   `RUST_LOG`) and the export layer, each filtered on its own.
//!
//! The spans themselves are made by `planwave-telemetry`, which the libraries use without
//! building an exporter, tonic or a blocking HTTP client. Every span planwave exports has a
//! target starting with `planwave`; the export layer takes nothing else (no ractor or HTTP
//! library spans), whatever `RUST_LOG` says for stderr.

pub mod export;
pub mod settings;
pub mod subscriber;

pub use export::{Telemetry, TelemetryError};
pub use settings::{OtlpProtocol, OtlpSettings, OtlpSettingsError};
pub use subscriber::{default_log_filter, install};
