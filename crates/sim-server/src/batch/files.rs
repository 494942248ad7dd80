//! `POST /v1/files` (purpose `batch`, checked for size and form), `GET /v1/files/{id}` and
//! `GET /v1/files/{id}/content`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{BatchState, StoredFile, find, multipart, not_found, now, refused};
use crate::server::error;

fn bad(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, message, "invalid_request_error")
}

fn object(f: &StoredFile) -> serde_json::Value {
    json!({
        "id": f.id, "object": "file", "bytes": f.bytes.len(), "created_at": f.created_at,
        "filename": f.filename, "purpose": f.purpose,
    })
}

pub(crate) async fn upload(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let parts = match multipart::boundary(ct).and_then(|b| multipart::parse(&b, &body)) {
        Ok(p) => p,
        Err(e) => return bad(&e),
    };
    let purpose = parts
        .iter()
        .find(|p| p.name == "purpose")
        .map(|p| String::from_utf8_lossy(&p.data).trim().to_owned());
    if purpose.as_deref() != Some("batch") {
        return bad("purpose must be \"batch\" (the simulator keeps batch input files only)");
    }
    let Some(file) = parts.into_iter().find(|p| p.name == "file") else {
        return bad("the form has no \"file\" part");
    };
    if file.data.is_empty() {
        return bad("the file is empty");
    }
    if file.data.len() > st.cfg.max_file_bytes {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the file is larger than {} bytes", st.cfg.max_file_bytes),
            "invalid_request_error",
        );
    }
    let filename: String = file
        .filename
        .unwrap_or_else(|| "upload.jsonl".into())
        .chars()
        .filter(|c| !c.is_control())
        .take(255)
        .collect();
    let n = st.next.fetch_add(1, Ordering::Relaxed);
    let stored = StoredFile {
        id: format!("file-sim-{n}"),
        purpose: "batch".into(),
        filename,
        bytes: Arc::new(file.data),
        created_at: now(),
    };
    let answer = object(&stored);
    let mut s = st.store();
    s.stats.files_uploaded += 1;
    s.files.insert(stored.id.clone(), stored);
    // Tells planwave it may send what each line is about (never in the lines themselves).
    (
        StatusCode::OK,
        [(planwave_llm::batch::SIMULATOR_HEADER, "batch-contexts")],
        axum::Json(answer),
    )
        .into_response()
}

pub(crate) async fn file(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    match find(&st.store().files, &id) {
        Some(f) => axum::Json(object(f)).into_response(),
        None => not_found("file"),
    }
}

pub(crate) async fn content(
    State(st): State<Arc<BatchState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = refused(&st, &headers) {
        return r;
    }
    let bytes = find(&st.store().files, &id).map(|f| f.bytes.clone());
    match bytes {
        Some(b) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/jsonl")],
            b.as_ref().clone(),
        )
            .into_response(),
        None => not_found("file"),
    }
}
