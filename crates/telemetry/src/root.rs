//! The trace's root span `run`, which every executing command runs in: its fields are
//! declared here (empty) so the runner can fill them in as the run learns them, and the
//! command's ending sets its exit code and status.

use tracing::Span;
use tracing::field::Empty;

/// The root span for `command` (`run`, `research`, `batch`...), target `planwave::cli`.
pub fn root_span(command: &'static str) -> Span {
    tracing::info_span!(
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
    )
}

/// Records how the command ended: an exit code (any but 0 marks the span failed), or an
/// error that ended it before it had one (its message becomes the status description).
pub fn end_root(span: &Span, ended: Result<u8, &str>) {
    match ended {
        Ok(code) => {
            span.record("planwave.exit_code", i64::from(code));
            if code != 0 {
                span.record("otel.status_code", "error");
            }
        }
        Err(message) => {
            span.record("otel.status_code", "error");
            span.record("otel.status_description", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing_subscriber::layer::{Context, SubscriberExt};

    use super::*;

    /// Every field value recorded on any span, as `name=value`.
    #[derive(Clone, Default)]
    struct Fields(Arc<Mutex<Vec<String>>>);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if let Ok(mut v) = self.0.lock() {
                v.push(format!("{}={value:?}", field.name()));
            }
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Fields {
        fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
            attrs.record(&mut self.clone());
        }
        fn on_record(&self, _: &Id, values: &Record<'_>, _: Context<'_, S>) {
            values.record(&mut self.clone());
        }
    }

    fn recorded(ended: Result<u8, &str>) -> Vec<String> {
        let fields = Fields::default();
        let subscriber = tracing_subscriber::registry().with(fields.clone());
        tracing::subscriber::with_default(subscriber, || {
            let span = root_span("run");
            assert_eq!(span.metadata().map(|m| m.target()), Some("planwave::cli"));
            end_root(&span, ended);
        });
        fields.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    #[test]
    fn a_nonzero_exit_code_marks_the_root_failed() {
        let ok = recorded(Ok(0));
        assert!(
            ok.contains(&"planwave.command=\"run\"".to_owned()),
            "{ok:?}"
        );
        assert!(ok.contains(&"planwave.exit_code=0".to_owned()), "{ok:?}");
        assert!(
            !ok.iter().any(|f| f.starts_with("otel.status_code")),
            "{ok:?}"
        );
        let partial = recorded(Ok(3));
        assert!(partial.contains(&"planwave.exit_code=3".to_owned()));
        assert!(partial.contains(&"otel.status_code=\"error\"".to_owned()));
    }

    #[test]
    fn an_error_becomes_the_status_description() {
        let failed = recorded(Err("reading plan.json: not found"));
        assert!(failed.contains(&"otel.status_code=\"error\"".to_owned()));
        assert!(
            failed.contains(&"otel.status_description=\"reading plan.json: not found\"".to_owned()),
            "{failed:?}"
        );
        assert!(!failed.iter().any(|f| f.starts_with("planwave.exit_code")));
    }
}
