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
        api::run_rounds,
        api::create_batch,
        crate::batches::list_batches,
        crate::batches::get_batch,
    ),
    components(schemas(
        api::CreateRun,
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
