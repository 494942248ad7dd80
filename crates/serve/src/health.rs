//! `GET /healthz` (the process answers), `GET /readyz` (what it needs is there: each
//! [`Probe`] passes) and `GET /metrics`, for orchestrators and Prometheus. `planwave serve`
//! mounts them on its own router; `planwave worker --metrics-addr` serves them alone
//! ([`serve_health`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use planwave_mcp::McpRegistry;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;

use crate::ServeLimits;
use crate::conn::ConnLimits;
use crate::guard::{Guard, cross_site};
use crate::metrics::{CONTENT_TYPE, Metrics};

/// How long one readiness check or the scrape's refresh may take: an orchestrator's probe
/// must get an answer, not hang with a server that is away.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// One thing the process needs to do its work.
pub trait Probe: Send + Sync {
    fn name(&self) -> &str;
    /// `Err` says what is wrong.
    fn check(&self) -> BoxFuture<'_, Result<(), String>>;
}

/// Refreshes series read from elsewhere (the queue's depth) before a scrape.
pub type BeforeScrape = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// What `/readyz` checks and `/metrics` shows.
pub struct Health {
    pub metrics: Arc<Metrics>,
    pub probes: Vec<Arc<dyn Probe>>,
    pub before_scrape: Option<BeforeScrape>,
}

/// A directory the process writes in (the data directory, the worker's cache): a file can
/// be created and removed there.
pub struct Writable(pub PathBuf);

impl Probe for Writable {
    fn name(&self) -> &str {
        "data_dir"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let probe = self.0.join(format!(".readyz-{}", std::process::id()));
            let written = tokio::fs::write(&probe, b"ok").await;
            let _ = tokio::fs::remove_file(&probe).await;
            written.map_err(|e| format!("{} is not writable: {e}", self.0.display()))
        })
    }
}

/// The MCP servers every job shares started (none configured passes).
pub struct McpUp(pub Option<Arc<McpRegistry>>);

impl Probe for McpUp {
    fn name(&self) -> &str {
        "mcp"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let Some(registry) = &self.0 else {
                return Ok(());
            };
            let failed: Vec<String> = registry
                .failures()
                .into_iter()
                .map(|f| format!("{}: {}", f.server, f.reason))
                .collect();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(format!("MCP server(s) down: {}", failed.join("; ")))
            }
        })
    }
}

pub async fn healthz() -> &'static str {
    "ok\n"
}

/// 200 when every probe passes, else 503; the body names each check's result.
pub async fn readyz(State(h): State<Arc<Health>>) -> Response {
    let results = futures::future::join_all(h.probes.iter().map(|p| async move {
        let r = tokio::time::timeout(CHECK_TIMEOUT, p.check())
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {}s", CHECK_TIMEOUT.as_secs())));
        (p.name().to_owned(), r)
    }))
    .await;
    let ready = results.iter().all(|(_, r)| r.is_ok());
    let checks: Map<String, Value> = results
        .into_iter()
        .map(|(name, r)| (name, r.err().map_or(json!("ok"), Value::String)))
        .collect();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        axum::Json(json!({"ready": ready, "checks": checks})),
    )
        .into_response()
}

/// The metrics, after the series read on demand (the queue's depth) are refreshed. Events
/// are counted as they are emitted: there is nothing to wait for.
pub async fn scrape(h: &Health) -> Response {
    if let Some(refresh) = &h.before_scrape {
        let _ = tokio::time::timeout(CHECK_TIMEOUT, refresh()).await;
    }
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], h.metrics.encode()).into_response()
}

async fn metrics(State(h): State<Arc<Health>>) -> Response {
    scrape(&h).await
}

/// `/healthz` and `/readyz`, open to any caller (they tell nothing about the runs).
pub fn probe_routes(h: Arc<Health>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(h)
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` until `stop` is cancelled (a
/// worker's `--metrics-addr`); returns the address bound. With `planwave serve`'s own guards,
/// from `limits`: a `Host` that is not this server's is refused (its allowed hosts), request
/// headers must arrive within its header timeout, a write may wait for a client that reads
/// nothing its write timeout, and at most its connections are served at once (the rest of
/// [`ServeLimits`] is about jobs, which this endpoint has none of).
pub async fn serve_health(
    addr: SocketAddr,
    h: Arc<Health>,
    limits: &ServeLimits,
    stop: tokio_util::sync::CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let guard = Arc::new(Guard::new(bound, &limits.allowed_hosts));
    let app = probe_routes(h.clone())
        .merge(Router::new().route("/metrics", get(metrics)).with_state(h))
        .layer(axum::middleware::from_fn_with_state(guard, cross_site));
    let conn = ConnLimits {
        max_connections: limits.max_connections,
        header_timeout: limits.header_timeout,
        write_timeout: limits.write_timeout,
    };
    tokio::spawn(async move {
        let stopped = async move { stop.cancelled().await };
        if let Err(e) = crate::conn::serve(listener, app, conn, stopped).await {
            tracing::warn!(error = %e, "the metrics endpoint stopped");
        }
    });
    Ok(bound)
}

/// `planwave serve`'s `/metrics`, behind its token like the API (Prometheus sends it with
/// `authorization: {credentials: ...}`).
pub(crate) async fn app_metrics(State(state): State<Arc<crate::state::AppState>>) -> Response {
    scrape(&state.health).await
}
