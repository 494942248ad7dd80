//! Requests a web page may send on its visitor's behalf (issue 33, "cross-site requests"):
//! the server on loopback is reachable from every page the user opens, so
//!
//! - `Host` must name this server (its bound address, `localhost` when that is loopback, or
//!   a name given with `--allowed-host`): a page on a name the attacker re-points at
//!   127.0.0.1 (DNS rebinding) sends its own name and is refused;
//! - a state-changing request (any method but GET, HEAD, OPTIONS) whose `Origin` is not this
//!   server's own is refused (browsers send `Origin` on every such request, including
//!   `no-cors` fetches and form posts; `null` is not ours either);
//! - the JSON endpoints take only `application/json` (`POST /api/batches` also its job-file
//!   types): the content types a page can send without a CORS preflight (`text/plain`, forms)
//!   are refused before the body is read.
//!
//! Ports are not compared: a proxy may forward any port, and rebinding changes the name.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::refuse;

/// Who the server is, for the checks above.
pub struct Guard {
    bound: SocketAddr,
    allowed: Vec<String>,
}

/// The name part of a `Host` value (`name`, `name:port`, `[v6]:port`), lower case.
pub fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else if host.matches(':').count() == 1 {
        host.split(':').next().unwrap_or("")
    } else {
        host
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl Guard {
    pub fn new(bound: SocketAddr, allowed: &[String]) -> Guard {
        Guard {
            bound,
            allowed: allowed.iter().map(|h| host_name(h)).collect(),
        }
    }

    /// Whether a `Host` value names this server.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        if name.is_empty() {
            return false;
        }
        if self.allowed.contains(&name) {
            return true;
        }
        let ip = self.bound.ip();
        let local = ip.is_loopback() || ip.is_unspecified();
        match name.parse::<IpAddr>() {
            // An address cannot be re-pointed: any of ours will do.
            Ok(asked) => {
                ip.is_unspecified() || asked == ip || (ip.is_loopback() && asked.is_loopback())
            }
            Err(_) => local && name == "localhost",
        }
    }
}

/// Whether `origin` (`scheme://host[:port]`) is the one of a page served for `host`.
pub fn same_origin(origin: &str, host: &str) -> bool {
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host.trim()))
}

fn changes_state(m: &Method) -> bool {
    !matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The content types a JSON endpoint takes, by path; `None`: the endpoint reads no body.
fn body_types(m: &Method, path: &str) -> Option<&'static [&'static str]> {
    if *m != Method::POST {
        return None;
    }
    match path {
        "/api/runs" => Some(&["application/json"]),
        "/api/batches" => Some(&[
            "application/x-ndjson",
            "application/jsonl",
            "application/jsonlines",
            "application/json",
        ]),
        _ => None,
    }
}

/// A `Content-Type`'s media type without its parameters, lower case.
pub fn media_type(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(
        v.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}

pub async fn cross_site(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
    let Some(host) = host.filter(|h| guard.host_allowed(h)) else {
        let shown = headers
            .get(header::HOST)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        return refuse(
            StatusCode::FORBIDDEN,
            format!(
                "Host {shown:?} is not this server's (a name it serves is given with --allowed-host)"
            ),
        );
    };
    if changes_state(req.method())
        && let Some(origin) = headers.get(header::ORIGIN)
    {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        if !same_origin(&origin, &host) {
            return refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "Origin {origin:?} is not this server's: requests from other sites may not change anything"
                ),
            );
        }
    }
    if let Some(types) = body_types(req.method(), req.uri().path()) {
        let got = media_type(req.headers());
        if !got.as_deref().is_some_and(|t| types.contains(&t)) {
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Content-Type must be {} (got {})",
                    types.join(" or "),
                    got.as_deref().unwrap_or("none")
                ),
            );
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_this_servers_by_address_localhost_or_allowed_name() {
        let g = Guard::new("127.0.0.1:8080".parse().unwrap(), &["Planwave.Test".into()]);
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:9",
            "LOCALHOST",
            "[::1]:8080",
            "planwave.test:1",
            "planwave.test.",
        ] {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for no in [
            "",
            "evil.example",
            "127.0.0.1.evil.example:8080",
            "10.0.0.1:8080",
            "localhost.evil",
        ] {
            assert!(!g.host_allowed(no), "{no}");
        }
        let any = Guard::new("0.0.0.0:80".parse().unwrap(), &[]);
        assert!(any.host_allowed("192.168.1.9:80") && any.host_allowed("localhost"));
        assert!(!any.host_allowed("rebind.example"));
        let lan = Guard::new("192.168.1.9:80".parse().unwrap(), &[]);
        assert!(lan.host_allowed("192.168.1.9") && !lan.host_allowed("localhost"));
    }

    #[test]
    fn origins_match_the_host_in_full() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(same_origin("https://Box.example", "box.example"));
        assert!(!same_origin("http://127.0.0.1:8081", "127.0.0.1:8080"));
        assert!(!same_origin("null", "127.0.0.1:8080"));
        assert!(!same_origin("http://127.0.0.1:8080.evil", "127.0.0.1:8080"));
    }
}
