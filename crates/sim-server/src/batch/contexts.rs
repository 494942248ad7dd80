//! `POST /v1/planwave/batch-contexts`: what each line of an uploaded batch file is about (a
//! normal call's `x-planwave-*` headers: role, attempt, context), by `custom_id`, so the
//! lines themselves hold only OpenAI's documented fields. planwave sends it only after the
//! upload's answer said this server is the simulator, and before it creates the batch.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{BatchState, find, not_found, refused};
use crate::server::error;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    input_file_id: String,
    lines: Map<String, Value>,
}

pub(crate) async fn store(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    let b: Body = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("invalid JSON body: {e}"),
                "invalid_request_error",
            );
        }
    };
    let mut s = st.store();
    if find(&s.files, &b.input_file_id).is_none() {
        return not_found("file: input_file_id");
    }
    let n = b.lines.len();
    s.contexts.insert(b.input_file_id, Arc::new(b.lines));
    (StatusCode::OK, axum::Json(json!({"lines": n}))).into_response()
}
