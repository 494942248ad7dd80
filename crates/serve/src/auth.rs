//! The bearer token (`PLANWAVE_SERVE_TOKEN`), required on every route when set (and the
//! server refuses a non-loopback address without one). API clients send
//! `Authorization: Bearer TOKEN`; a browser opens `/?token=TOKEN` once (the value
//! URL-encoded) and is redirected to the same address without it, with the token as an
//! HttpOnly, SameSite=Strict cookie that its page requests and `EventSource` then carry:
//! the token does not stay in the address bar, the history or a copied link, no script can
//! read it, and no other site's request carries it.

use std::sync::Arc;

use axum::extract::Query;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
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

/// The cookie's value: the token percent-encoded (a token may hold `;`, spaces, anything).
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .and_then(|v| percent_encoding::percent_decode_str(v).decode_utf8().ok())
        .map(|v| v.into_owned())
}

/// The `token` of the query string, decoded as a form value (`%XX`, `+` a space).
pub fn query_token(uri: &axum::http::Uri) -> Option<String> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri).ok()?;
    pairs
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
}

/// The address without its `token` parameter: where the browser is sent on.
fn without_token(uri: &axum::http::Uri) -> String {
    let kept: Vec<&str> = uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|kv| {
            let key = kv.split('=').next().unwrap_or("").replace('+', " ");
            !kv.is_empty()
                && percent_encoding::percent_decode_str(&key).decode_utf8_lossy() != "token"
        })
        .collect();
    if kept.is_empty() {
        uri.path().to_owned()
    } else {
        format!("{}?{}", uri.path(), kept.join("&"))
    }
}

fn set_cookie(token: &str) -> Option<HeaderValue> {
    let value = percent_encoding::utf8_percent_encode(token, percent_encoding::NON_ALPHANUMERIC);
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict"
    ))
    .ok()
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
    if ok(bearer(req.headers())) || ok(cookie(req.headers()).as_deref()) {
        return next.run(req).await;
    }
    // Only a page being opened takes the token from its address, and only to move it into
    // the cookie: a redirect drops it from the address bar.
    let navigation = matches!(*req.method(), Method::GET | Method::HEAD);
    if navigation
        && ok(query_token(req.uri()).as_deref())
        && let Some(cookie) = set_cookie(token)
    {
        let to = without_token(req.uri());
        let mut resp =
            (StatusCode::SEE_OTHER, [(header::CACHE_CONTROL, "no-store")]).into_response();
        if let Ok(to) = HeaderValue::from_str(&to) {
            resp.headers_mut().insert(header::LOCATION, to);
        }
        resp.headers_mut().insert(header::SET_COOKIE, cookie);
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
        assert_eq!(cookie(&h).as_deref(), Some("xyz"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer  t0k "),
        );
        assert_eq!(bearer(&h), Some("t0k"));
    }

    #[test]
    fn the_query_token_is_decoded_and_dropped_from_the_address() {
        let uri: axum::http::Uri = "/runs/x?a=1&token=t%20k%2B+%3B&b=%74oken".parse().unwrap();
        assert_eq!(query_token(&uri).as_deref(), Some("t k+ ;"));
        assert_eq!(without_token(&uri), "/runs/x?a=1&b=%74oken");
        let only: axum::http::Uri = "/?token=x".parse().unwrap();
        assert_eq!(without_token(&only), "/");
        let v = set_cookie("a; b=%").unwrap();
        let mut h = HeaderMap::new();
        let pair = v.to_str().unwrap().split(';').next().unwrap().to_owned();
        h.insert(header::COOKIE, HeaderValue::from_str(&pair).unwrap());
        assert_eq!(cookie(&h).as_deref(), Some("a; b=%"));
    }
}
