//! Trace export flags (`--otlp-endpoint`, `--otlp-protocol`, `--trace-content`), the `run`
//! root span every executing command runs in, and the logging + export setup.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use clap::Args;
use planwave_llm::LlmProvider;
use planwave_llm::TracedProvider;
use planwave_otlp::{OtlpSettings, Telemetry};
use tracing::Instrument;

use super::exit::{InvalidInput, Outcome};

/// Traces (OpenTelemetry). Without an endpoint (flag or `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`)
/// nothing is exported.
#[derive(Debug, Args)]
pub struct TelemetryOptions {
    /// Export traces over OTLP to this collector base URL, e.g. http://localhost:4318
    /// (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, global = true, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// OTLP transport: http/protobuf (port 4318) or grpc (port 4317)
    /// (default: $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf).
    #[arg(long, global = true, value_name = "PROTOCOL")]
    pub otlp_protocol: Option<String>,
    /// Put prompt and completion text on the model-call spans (off by default: prompts and
    /// sections may hold anything).
    #[arg(long, global = true)]
    pub trace_content: bool,
}

static TRACE_CONTENT: OnceLock<bool> = OnceLock::new();

/// Logging to stderr (`-v`, `RUST_LOG`) plus, when configured, OTLP trace export. The
/// returned guard must be shut down after the command, whatever its outcome.
pub fn init(
    verbose: u8,
    opts: &TelemetryOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<Telemetry, InvalidInput> {
    let invalid = |e: &dyn std::fmt::Display| InvalidInput {
        source_name: "telemetry".into(),
        problems: vec![planwave_redact::redact_urls_in(&e.to_string()).into_owned()],
    };
    let settings = OtlpSettings::resolve(
        opts.otlp_endpoint.as_deref(),
        opts.otlp_protocol.as_deref(),
        opts.trace_content,
        |k| std::env::var(k).ok(),
    )
    .map_err(|e| invalid(&e))?;
    let _ = TRACE_CONTENT.set(opts.trace_content);
    planwave_otlp::install(
        verbose,
        settings.as_ref(),
        planwave_runner::term::log_writer,
        runtime,
    )
    .map_err(|e| invalid(&e))
}

/// Every model call gets a GenAI `chat` span.
pub fn traced(provider: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
    TracedProvider::wrap(provider, TRACE_CONTENT.get().copied().unwrap_or(false))
}

/// Runs a command inside the trace's root span `run`; `execute_plan` fills in the run's
/// id, topic and counts, and the command's outcome sets the status.
pub async fn in_root(
    command: &'static str,
    work: impl Future<Output = anyhow::Result<Outcome>>,
) -> anyhow::Result<Outcome> {
    let span = planwave_telemetry::root_span(command);
    let result = work.instrument(span.clone()).await;
    match &result {
        Ok(Outcome(code)) => planwave_telemetry::end_root(&span, Ok(*code)),
        Err(e) => planwave_telemetry::end_root(&span, Err(format!("{e:#}").as_str())),
    }
    result
}
