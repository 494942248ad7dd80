//! `planwave serve`: runs over HTTP. A JSON API (documented in docs/api.md and as OpenAPI at
//! `/api/openapi.json`) starts runs (a plan or a goal), lists them, gives their live state,
//! streams their events as Server-Sent Events, serves reports and sections, cancels and
//! resumes; a web view (`/`, `/runs/{id}`) shows the same live, in plain JS and CSS compiled
//! into the binary.
//!
//! Runs are ordinary run directories under the data directory, so runs made by
//! `planwave run --out DATA/<name>` show up too, and `planwave resume DATA/<id>` works on
//! runs started here. Every job goes through `planwave_runner` as the CLI's do, sharing
//! one model client, limiter and MCP registry ([`AppState::shared`]).
//!
//! This crate knows no command-line flags and builds no command line: a request's
//! `"options"` are the job spec's own [`RequestOptions`](planwave_config::spec::RequestOptions)
//! (every option of a job but the host's, which are the server's own), so they mean what the
//! same flags mean and the OpenAPI document describes them from the same types; the job runs
//! through `planwave_runner::ops` (which records the spec) and is resumed by the same
//! `ops::Resumable` as `planwave resume`. It never prints: the front end prints
//! [`Server::url`].

mod answers;
mod api;
mod auth;
mod batch_api;
mod batches;
mod body;
mod conn;
#[cfg(test)]
mod decode_props;
mod error;
mod guard;
pub mod health;
mod ids;
mod jobs;
mod json_errors;
mod limits;
mod listing;
mod live;
mod log;
pub mod metrics;
mod openapi;
mod queue;
mod remote;
mod run_files;
mod run_metrics;
mod sse;
mod state;
mod ui;
mod write_timeout;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use planwave_runner::ops::Resources;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use limits::ServeLimits;
pub use openapi::ApiDoc;
pub use state::AppState;

/// How the server listens.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    /// Where runs live (created if missing).
    pub data: PathBuf,
    /// The bearer token every request must carry; required off loopback.
    pub token: Option<String>,
    /// The largest request body accepted (413 above).
    pub max_body: usize,
    /// The host's options every job has (the server's config file and MCP servers); a
    /// request sets the rest.
    pub host: planwave_config::spec::HostOptions,
    /// Hosts, jobs, tasks, connections and timeouts (see [`ServeLimits`]).
    pub limits: ServeLimits,
    /// `serve --nats`: submit jobs to this queue (run by `planwave worker`s) and show what
    /// it holds; `None` runs them here.
    pub queue: Option<planwave_queue::Queue>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "{0} is not a loopback address: set PLANWAVE_SERVE_TOKEN so every request must carry it"
    )]
    TokenRequired(SocketAddr),
    #[error("cannot use the data directory {path}: {source}")]
    Data {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(std::io::Error),
}

/// A bound server, not yet serving.
pub struct Server {
    listener: TcpListener,
    state: Arc<AppState>,
    max_body: usize,
    limits: ServeLimits,
}

impl Server {
    /// Checks the address against the token, prepares the data directory and binds.
    pub async fn bind(config: ServeConfig, shared: Resources) -> Result<Server, ServeError> {
        let token = config.token.filter(|t| !t.trim().is_empty());
        if !config.addr.ip().is_loopback() && token.is_none() {
            return Err(ServeError::TokenRequired(config.addr));
        }
        let data_err = |source| ServeError::Data {
            path: config.data.clone(),
            source,
        };
        std::fs::create_dir_all(&config.data).map_err(data_err)?;
        let data = config.data.canonicalize().map_err(data_err)?;
        let listener = TcpListener::bind(config.addr)
            .await
            .map_err(|source| ServeError::Bind {
                addr: config.addr,
                source,
            })?;
        let remote = config.queue.map(remote::Remote::new);
        let mut probes: Vec<Arc<dyn health::Probe>> = vec![
            Arc::new(health::Writable(data.clone())),
            Arc::new(health::McpUp(shared.mcp.clone())),
        ];
        if let Some(r) = &remote {
            probes.push(Arc::new(remote::NatsUp(r.queue.clone())));
        }
        let state = Arc::new(AppState {
            host: config.host,
            token,
            live: Default::default(),
            shutdown: CancellationToken::new(),
            jobs: TaskTracker::new(),
            summaries: Default::default(),
            limits: limits::Limits::new(&config.limits, config.max_body),
            health: Arc::new(health::Health {
                probes,
                metrics: metrics::Metrics::new(),
                before_scrape: None,
            }),
            data,
            shared,
            remote,
            batch_clients: Default::default(),
        });
        Ok(Server {
            listener,
            state,
            max_body: config.max_body,
            limits: config.limits,
        })
    }

    /// `http://ADDR:PORT/`, with the port actually bound.
    pub fn url(&self) -> String {
        match self.listener.local_addr() {
            Ok(a) => format!("http://{a}/"),
            Err(_) => "http://?/".into(),
        }
    }

    /// Serves until `shutdown` resolves; then every running job is cancelled as on Ctrl-C
    /// (its journal flushed, resumable) and waited for.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let state = self.state.clone();
        let bound = self.listener.local_addr().map_err(ServeError::Serve)?;
        let guard = Arc::new(guard::Guard::new(bound, &self.limits.allowed_hosts));
        // Outermost: a foreign Host or Origin, or a body a page could forge, is refused
        // before anything else (the token included); every API error leaves as JSON.
        let app = router(self.state, self.max_body)
            .layer(axum::middleware::from_fn_with_state(
                guard,
                guard::cross_site,
            ))
            .layer(axum::middleware::from_fn(json_errors::api_errors_as_json));
        let stop = async move {
            shutdown.await;
            state.shutdown.cancel();
            state.jobs.close();
            state.jobs.wait().await;
        };
        let limits = conn::ConnLimits {
            max_connections: self.limits.max_connections,
            header_timeout: self.limits.header_timeout,
            write_timeout: self.limits.write_timeout,
        };
        conn::serve(self.listener, app, limits, stop)
            .await
            .map_err(ServeError::Serve)
    }
}

fn router(state: Arc<AppState>, max_body: usize) -> Router {
    Router::new()
        .route("/", get(ui::index))
        .route("/runs/{id}", get(ui::run_page))
        .route("/runs/{id}/dag.svg", get(ui::dag))
        .route("/runs/{id}/gantt.svg", get(ui::gantt))
        .route("/assets/{name}", get(ui::asset))
        .route("/api/openapi.json", get(openapi::document))
        .route("/api/runs", get(api::list_runs).post(api::create_run))
        .route("/api/runs/{id}", get(api::get_run))
        .route("/api/runs/{id}/events", get(api::run_events))
        .route("/api/runs/{id}/report", get(api::run_report))
        .route("/api/runs/{id}/sections/{task}", get(api::run_section))
        .route("/api/runs/{id}/rounds", get(api::run_rounds))
        .route("/api/runs/{id}/cancel", post(api::cancel_run))
        .route("/api/runs/{id}/resume", post(api::resume_run))
        .route("/api/runs/{id}/answers", post(answers::post_answers))
        .route(
            "/api/batches",
            post(api::create_batch).get(batches::list_batches),
        )
        .route("/api/batches/{id}", get(batches::get_batch))
        .route("/metrics", get(health::app_metrics))
        .route("/api/metrics", get(run_metrics::get_metrics))
        // Innermost, after the token: a request naming a run reads it from the queue first.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            remote::sync_run,
        ))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            body::read_whole,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        .with_state(state.clone())
        .merge(health::probe_routes(state.health.clone()))
}
