//! Trace export flags (`--otlp-endpoint`, `--otlp-protocol`, `--trace-content`), the `run`
//! root span every executing command runs in, and the logging + export setup.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use clap::Args;
use planwave_llm::LlmProvider;
use planwave_llm::TracedProvider;
use planwave_otlp::{OtlpSettings, Telemetry};
use tracing::Instrument;
use tracing::field::Empty;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use super::exit::{InvalidInput, OK, Outcome};

/// Traces (OpenTelemetry). Without an endpoint (flag or OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT)
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
    let settings = OtlpSettings::resolve(
        opts.otlp_endpoint.as_deref(),
        opts.otlp_protocol.as_deref(),
        opts.trace_content,
        |k| std::env::var(k).ok(),
    )
    .map_err(|e| InvalidInput {
        source_name: "telemetry".into(),
        problems: vec![planwave_redact::redact_urls_in(&e.to_string()).into_owned()],
    })?;
    let _ = TRACE_CONTENT.set(opts.trace_content);
    let (telemetry, otel) = match &settings {
        Some(s) => {
            let (t, layer) = Telemetry::start(s, runtime).map_err(|e| InvalidInput {
                source_name: "telemetry".into(),
                problems: vec![planwave_redact::redact_urls_in(&e.to_string()).into_owned()],
            })?;
            (t, Some(layer))
        }
        None => (Telemetry::disabled(), None),
    };
    let default = match verbose {
        // rmcp logs its transport failures with Rust type names; planwave reports the same
        // failure itself, in words, so rmcp's own lines wait for -v.
        0 => "warn,rmcp=off",
        1 => "info,ractor=warn,rmcp=warn",
        _ => "debug,ractor=info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // The stderr filter is per layer, so `warn` on stderr still lets the export layer see
    // planwave's info-level spans.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(super::term::log_writer)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(fmt)
        .try_init();
    if let Some(s) = &settings {
        tracing::info!("exporting traces: {s:?}");
    }
    Ok(telemetry)
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
    let span = tracing::info_span!(
        target: "planwave::cli",
        "run",
        planwave.command = command,
        planwave.run.id = Empty,
        planwave.topic = Empty,
        planwave.tasks = Empty,
        planwave.waves = Empty,
        planwave.status = Empty,
        planwave.exit_code = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    let result = work.instrument(span.clone()).await;
    match &result {
        Ok(Outcome(code)) => {
            span.record("planwave.exit_code", i64::from(*code));
            if *code != OK {
                span.record("otel.status_code", "error");
            }
        }
        Err(e) => {
            span.record("otel.status_code", "error");
            span.record("otel.status_description", format!("{e:#}").as_str());
        }
    }
    result
}
