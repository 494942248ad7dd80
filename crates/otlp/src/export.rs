//! The OTLP exporter behind a `tracing` layer, and the guard that flushes it.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tracing_subscriber::Layer;
use tracing_subscriber::registry::Registry;

use crate::settings::{OtlpProtocol, OtlpSettings};

/// The layer that turns planwave's spans into OpenTelemetry spans.
pub type OtelLayer = Box<dyn Layer<Registry> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("cannot set up OTLP export to {endpoint}: {reason}")]
    Build { endpoint: String, reason: String },
    #[error("flushing traces to {endpoint}: {reason}")]
    Flush { endpoint: String, reason: String },
}

/// How long the final flush may take when the collector is slow or gone: a run's exit must
/// not hang on its traces.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Spans buffered for export before new ones are dropped (a span is well under 1 KiB).
const MAX_QUEUE_SIZE: usize = 65_536;
/// Per export request.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Owns the tracer provider. [`Telemetry::shutdown`] (or drop) exports what is buffered;
/// the binary calls it after the command on every path, success, failure or Ctrl-C.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    endpoint: String,
    trace_content: bool,
}

impl Telemetry {
    /// Telemetry that exports nothing (no endpoint configured).
    pub fn disabled() -> Telemetry {
        Telemetry {
            provider: None,
            endpoint: String::new(),
            trace_content: false,
        }
    }

    /// Builds the exporter and the layer to install. gRPC (tonic) needs a Tokio runtime: pass
    /// its handle; the HTTP exporter uses a blocking client on its own thread.
    pub fn start(
        settings: &OtlpSettings,
        runtime: &tokio::runtime::Handle,
    ) -> Result<(Telemetry, OtelLayer), TelemetryError> {
        let build_err = |reason: String| TelemetryError::Build {
            endpoint: settings.endpoint.clone(),
            reason,
        };
        // The HTTP exporter builds its own reqwest client, which takes the process's provider.
        planwave_tls::install();
        let exporter = match settings.protocol {
            OtlpProtocol::HttpProtobuf => SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(settings.endpoint.clone())
                .with_timeout(EXPORT_TIMEOUT)
                .build(),
            OtlpProtocol::Grpc => {
                let _entered = runtime.enter();
                SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(settings.endpoint.clone())
                    .with_timeout(EXPORT_TIMEOUT)
                    .build()
            }
        }
        .map_err(|e| build_err(e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attribute(opentelemetry::KeyValue::new(
                "service.version",
                env!("CARGO_PKG_VERSION"),
            ))
            .build();
        // A run of thousands of quick tasks makes spans faster than one export drains them:
        // with the SDK's default queue (2048 spans) a 10,000-task run on the simulator lost
        // a third of its spans (release build). OTEL_BSP_MAX_QUEUE_SIZE still wins.
        let mut batch = BatchConfigBuilder::default();
        if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
            batch = batch.with_max_queue_size(MAX_QUEUE_SIZE);
        }
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch.build())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("planwave");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_threads(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.target().starts_with("planwave") && *meta.level() <= tracing::Level::INFO
            }));
        Ok((
            Telemetry {
                provider: Some(provider),
                endpoint: settings.endpoint.clone(),
                trace_content: settings.trace_content,
            },
            Box::new(layer),
        ))
    }

    pub fn enabled(&self) -> bool {
        self.provider.is_some()
    }

    /// Whether `chat` spans may carry prompt and completion text.
    pub fn trace_content(&self) -> bool {
        self.trace_content
    }

    /// Exports every finished span and stops the exporter. Idempotent.
    pub fn shutdown(&mut self) -> Result<(), TelemetryError> {
        match self.provider.take() {
            Some(p) => {
                p.shutdown_with_timeout(SHUTDOWN_TIMEOUT)
                    .map_err(|e| TelemetryError::Flush {
                        endpoint: self.endpoint.clone(),
                        reason: e.to_string(),
                    })
            }
            None => Ok(()),
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
