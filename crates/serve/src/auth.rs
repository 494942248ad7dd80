//! The bearer token (`PLANWAVE_SERVE_TOKEN`), required on every route when set (and the
//! server refuses a non-loopback address without one). API clients send
//! `Authorization: Bearer TOKEN`; a browser opens `/?token=TOKEN` once and gets it as an
//! HttpOnly, SameSite=Strict cookie, which its page requests and `EventSource` then carry.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

const COOKIE: &str = "planwave_token";

/// Equal in time independent of where they differ (the token is a secret).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    v.strip_prefix("Bearer ").map(str::trim)
}

fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

fn query_token(req: &Request) -> Option<String> {
    let q = req.uri().query()?;
    q.split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(str::to_owned)
}

pub async fn require_token(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(token) = state.token.as_deref() else {
        return next.run(req).await;
    };
    let ok = |t: Option<&str>| t.is_some_and(|t| same(t.as_bytes(), token.as_bytes()));
    if ok(bearer(req.headers())) || ok(cookie(req.headers())) {
        return next.run(req).await;
    }
    if let Some(t) = query_token(&req)
        && ok(Some(&t))
    {
        let mut resp = next.run(req).await;
        let value = format!("{COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict");
        if let Ok(v) = HeaderValue::from_str(&value) {
            resp.headers_mut().insert(header::SET_COOKIE, v);
        }
        return resp;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(crate::error::ErrorBody {
            error:
                "a bearer token is required (Authorization: Bearer ..., see PLANWAVE_SERVE_TOKEN)"
                    .into(),
            problems: Vec::new(),
        }),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; planwave_token=xyz; b=2"),
        );
        assert_eq!(cookie(&h), Some("xyz"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer  t0k "),
        );
        assert_eq!(bearer(&h), Some("t0k"));
    }
}
