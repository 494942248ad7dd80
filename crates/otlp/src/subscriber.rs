//! The process's `tracing` subscriber: log lines on stderr (`-v`, `RUST_LOG`) and, when
//! configured, the OTLP export layer, each with its own filter.

use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::export::{Telemetry, TelemetryError};
use crate::settings::OtlpSettings;

/// The stderr filter for `-v` counted `verbose` times, when `RUST_LOG` says nothing.
pub fn default_log_filter(verbose: u8) -> &'static str {
    match verbose {
        // rmcp logs its transport failures with Rust type names; planwave reports the same
        // failure itself, in words, so rmcp's own lines wait for -v.
        0 => "warn,rmcp=off",
        1 => "info,ractor=warn,rmcp=warn",
        _ => "debug,ractor=info",
    }
}

/// Installs the global subscriber: log lines through `log_writer`, filtered by `RUST_LOG`
/// or [`default_log_filter`], and OTLP export when `settings` say where to. The returned
/// guard must be shut down after the command, whatever its outcome. A subscriber already
/// installed (a second call) is left in place.
pub fn install<W>(
    verbose: u8,
    settings: Option<&OtlpSettings>,
    log_writer: W,
    runtime: &tokio::runtime::Handle,
) -> Result<Telemetry, TelemetryError>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let (telemetry, otel) = match settings {
        Some(s) => {
            let (t, layer) = Telemetry::start(s, runtime)?;
            (t, Some(layer))
        }
        None => (Telemetry::disabled(), None),
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_log_filter(verbose)));
    // The stderr filter is per layer, so `warn` on stderr still lets the export layer see
    // planwave's info-level spans.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(log_writer)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(fmt)
        .try_init();
    if let Some(s) = settings {
        tracing::info!("exporting traces: {s:?}");
    }
    Ok(telemetry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_verbose_logs_more_and_rmcp_waits_for_v() {
        assert_eq!(default_log_filter(0), "warn,rmcp=off");
        assert_eq!(default_log_filter(1), "info,ractor=warn,rmcp=warn");
        assert_eq!(default_log_filter(2), "debug,ractor=info");
        assert_eq!(default_log_filter(9), "debug,ractor=info");
        for v in 0..3 {
            let filter = tracing_subscriber::EnvFilter::try_new(default_log_filter(v));
            assert!(filter.is_ok(), "filter for -v x{v} must parse");
        }
    }
}
