//! Every error of the API is JSON (`{"error": ...}`), including those axum makes before a
//! handler runs: a query string that does not parse (400), a body over the limit (413), a
//! method the route does not have (405). Their text becomes the `error`; status and other
//! headers (`Allow`, `WWW-Authenticate`) are kept. Pages and assets are left as they are.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::ErrorBody;

/// More than any rejection text axum writes; a longer body is cut.
const MAX_TEXT: usize = 16 * 1024;

pub async fn api_errors_as_json(req: Request, next: Next) -> Response {
    let api = req.uri().path().starts_with("/api/");
    let resp = next.run(req).await;
    let status = resp.status();
    if !api || !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, MAX_TEXT).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_owned(),
        Err(_) => String::new(),
    };
    let error = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    let body = serde_json::to_vec(&ErrorBody {
        error,
        problems: Vec::new(),
    })
    .unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body))
}
