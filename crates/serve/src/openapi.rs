//! The OpenAPI document served at `/api/openapi.json`, generated from the handlers'
//! annotations and the request and response types.

use utoipa::OpenApi;

use crate::api;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "planwave serve",
        description = "Runs, their live events and reports (docs/api.md)."
    ),
    paths(
        api::create_run,
        api::list_runs,
        api::get_run,
        api::run_events,
        api::run_report,
        api::run_section,
        api::cancel_run,
        api::resume_run,
        crate::answers::post_answers,
        api::run_rounds,
        api::create_batch,
        crate::batches::list_batches,
        crate::batches::get_batch,
    ),
    components(schemas(
        api::CreateRun,
        crate::answers::AnswersBody,
        planwave_config::spec::RequestOptions,
        api::Created,
        api::RunLinks,
        api::RunList,
        api::RoundView,
        api::BatchCreated,
        api::BatchRun,
        crate::batches::BatchList,
        crate::batches::BatchView,
        crate::batches::BatchRunState,
        crate::listing::RunSummary,
        crate::error::ErrorBody,
    ))
)]
pub struct ApiDoc;

pub async fn document() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use planwave_config::spec::RequestOptions;
    use serde_json::Value;

    use super::*;

    /// The properties a schema describes, through its `$ref`s and `allOf`s.
    fn properties(doc: &Value, schema: &Value, out: &mut BTreeSet<String>) {
        if let Some(r) = schema["$ref"].as_str() {
            let name = r.trim_start_matches("#/components/schemas/");
            return properties(doc, &doc["components"]["schemas"][name], out);
        }
        for part in schema["allOf"].as_array().into_iter().flatten() {
            properties(doc, part, out);
        }
        if let Some(props) = schema["properties"].as_object() {
            out.extend(props.keys().cloned());
        }
    }

    #[test]
    fn every_option_a_request_may_set_is_in_the_openapi_document() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let mut documented = BTreeSet::new();
        let schema = &doc["components"]["schemas"]["RequestOptions"];
        properties(&doc, schema, &mut documented);
        // Every option the spec writes (those left out when unset are set here).
        let mut options = RequestOptions::default();
        options.run.batch.batch_api = true;
        options.run.batch.batch_poll = Some(std::time::Duration::from_secs(1));
        options.run.batch.batch_linger = options.run.batch.batch_poll;
        options.run.batch.batch_poll_max = options.run.batch.batch_poll;
        options.planner.no_questions = true;
        options.planner.answers = Some(planwave_config::spec::Answers(vec![
            planwave_plan::clarification::Clarification {
                question: None,
                answer: "a".into(),
            },
        ]));
        let Value::Object(written) = serde_json::to_value(&options).unwrap() else {
            panic!("options are an object")
        };
        let written: BTreeSet<String> = written.keys().cloned().collect();
        assert_eq!(documented, written, "{schema}");
        assert!(documented.contains("sim_latency_ms") && documented.contains("max_rounds"));
        assert!(
            !documented.contains("config"),
            "the host's are not a request's"
        );
    }
}
