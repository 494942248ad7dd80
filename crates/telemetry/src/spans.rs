//! What the engine does to its `tracing` spans beyond fields: links, error status and the
//! W3C `traceparent`. Without an export layer installed these do nothing.

use opentelemetry::trace::{SpanContext, Status, TraceContextExt};
use opentelemetry::{Array, KeyValue, StringValue, Value};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// A span another span can link to (a task's span, for the tasks that depend on it).
#[derive(Clone, Debug)]
pub struct LinkTarget(SpanContext);

/// The span's identity, if it is exported at all.
pub fn link_target(span: &Span) -> Option<LinkTarget> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(LinkTarget(sc))
}

/// Links `span` to `target`, with a `planwave.link.kind` attribute saying why (e.g.
/// `prerequisite`), so Jaeger shows the plan's dependency edges between task spans.
pub fn add_link(span: &Span, target: &LinkTarget, kind: &'static str) {
    span.add_link_with_attributes(
        target.0.clone(),
        vec![KeyValue::new("planwave.link.kind", kind)],
    );
}

/// Marks the span failed, with the reason as status description.
pub fn set_error(span: &Span, message: &str) {
    span.set_status(Status::error(message.to_owned()));
}

/// A string-array attribute (`gen_ai.response.finish_reasons`), which `tracing` fields
/// cannot express.
pub fn set_strings(span: &Span, key: &'static str, values: &[String]) {
    let values: Vec<StringValue> = values.iter().map(|v| v.clone().into()).collect();
    span.set_attribute(key, Value::Array(Array::String(values)));
}

/// A string attribute set after the fact (for keys decided at run time).
pub fn set_string(span: &Span, key: &'static str, value: String) {
    span.set_attribute(key, value);
}

/// `00-<trace id>-<span id>-<flags>` of the span, for the `traceparent` header.
pub fn traceparent(span: &Span) -> Option<String> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_layer_spans_have_no_identity() {
        let span = tracing::info_span!(target: "planwave", "x");
        assert!(traceparent(&span).is_none());
        assert!(link_target(&span).is_none());
        set_error(&span, "nothing happens");
    }
}
