//! The API's errors: a status and a JSON body `{"error": "...", "problems": [...]}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug)]
pub enum ApiError {
    BadRequest(String),
    NotFound(String),
    Conflict(String),
    /// Every problem with a plan or the options, one message each, as `validate` prints them.
    Unprocessable(String, Vec<String>),
    Internal(String),
}

/// The body of every error answer.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: String,
    /// For 422: every problem, one per entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, error, problems) = match self {
            ApiError::BadRequest(e) => (StatusCode::BAD_REQUEST, e, Vec::new()),
            ApiError::NotFound(e) => (StatusCode::NOT_FOUND, e, Vec::new()),
            ApiError::Conflict(e) => (StatusCode::CONFLICT, e, Vec::new()),
            ApiError::Unprocessable(e, p) => (StatusCode::UNPROCESSABLE_ENTITY, e, p),
            ApiError::Internal(e) => {
                tracing::warn!(error = %e, "request failed");
                (StatusCode::INTERNAL_SERVER_ERROR, e, Vec::new())
            }
        };
        (status, Json(ErrorBody { error, problems })).into_response()
    }
}

impl From<planwave_runner::ops::InvalidInput> for ApiError {
    fn from(e: planwave_runner::ops::InvalidInput) -> Self {
        ApiError::Unprocessable(format!("{}: invalid", e.source_name), e.problems)
    }
}

pub fn no_run(id: &str) -> ApiError {
    ApiError::NotFound(format!("no run {id:?}"))
}

/// An error answer outside a handler (the middleware's refusals), shaped as every other.
pub fn refuse(status: StatusCode, error: String) -> Response {
    (
        status,
        Json(ErrorBody {
            error,
            problems: Vec::new(),
        }),
    )
        .into_response()
}
