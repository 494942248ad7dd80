//! A request body is read whole before its handler runs, within `--max-body` and
//! `--body-timeout` (issue 33, "slow clients"): a client trickling a body, or never finishing
//! it, is answered 408 and its connection closed, instead of holding a handler (and a
//! connection) for as long as it likes. Runs after the token check, so only a client that
//! may use the server gets a body buffered.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;

use crate::error::refuse;
use crate::state::AppState;

enum Unread {
    TooLarge,
    Broken(String),
}

fn too_large(max: usize) -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is over this server's --max-body ({max} bytes)"),
    )
}

async fn collect(body: Body, max: usize) -> Result<Bytes, Unread> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Unread::Broken(e.to_string()))?;
        if buf.len() + chunk.len() > max {
            return Err(Unread::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

pub async fn read_whole(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let max = state.limits.max_body;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return close(too_large(max));
    }
    let (parts, body) = req.into_parts();
    let limit = state.limits.body_timeout;
    let bytes = match tokio::time::timeout(limit, collect(body, max)).await {
        Ok(Ok(b)) => b,
        Ok(Err(Unread::TooLarge)) => return close(too_large(max)),
        Ok(Err(Unread::Broken(e))) => {
            return close(refuse(
                StatusCode::BAD_REQUEST,
                format!("reading the request body: {e}"),
            ));
        }
        Err(_) => {
            return close(refuse(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within this server's --body-timeout ({} ms)",
                    limit.as_millis()
                ),
            ));
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The rest of an unread body would be taken for the next request: the connection ends.
fn close(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}
