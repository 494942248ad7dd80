//! The fields a front end's root span carries about its run (declared empty by the front
//! end's span, filled in here as the run learns them).

/// The run's id, topic and size, recorded on the current span.
pub fn record_run(run_id: &uuid::Uuid, plan: &planwave_plan::ValidatedPlan) {
    let span = tracing::Span::current();
    span.record("planwave.run.id", run_id.to_string().as_str());
    span.record("planwave.topic", plan.spec().topic.as_str());
    span.record("planwave.tasks", plan.len() as i64);
    span.record("planwave.waves", plan.waves().len() as i64);
}

/// The run's status and, when it did not complete, why.
pub fn record_status(status: &str, description: Option<String>) {
    let span = tracing::Span::current();
    span.record("planwave.status", status);
    if let Some(d) = description {
        span.record("otel.status_description", d.as_str());
    }
}
