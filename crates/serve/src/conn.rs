//! Accepting connections (instead of `axum::serve`, which has neither of these): each
//! connection's request headers must arrive within `--header-timeout` (hyper's own timer,
//! also between the requests of a kept-alive connection), and at most `--max-connections`
//! are served at once. One more is answered `503` with a JSON error and closed, so a client
//! sees why; beyond a second allowance of the same size a connection is closed unanswered,
//! so a flood holds at most twice the limit of descriptors, each for at most the header
//! timeout. A connection whose client stops reading is dropped once a write has waited
//! `--write-timeout` ([`WriteTimeout`]), so a client that never reads its event stream does
//! not keep its place. On shutdown the listener closes and open connections finish their
//! current answer (event streams end with their runs, which the stop has cancelled).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::error::refuse;
use crate::write_timeout::WriteTimeout;

/// What the accept loop needs to know.
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    /// How long a write may wait for a client that reads nothing before the connection is
    /// dropped.
    pub write_timeout: Duration,
}

fn busy(max: usize) -> Response<Body> {
    let mut resp = refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the server is serving as many connections as its --max-connections ({max}); try again"
        ),
    )
    .into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// Serves `app` on `listener` until `stop` resolves, then waits for open connections.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let max = limits.max_connections.max(1);
    let serving = Arc::new(Semaphore::new(max));
    let refusing = Arc::new(Semaphore::new(max));
    let mut h1 = http1::Builder::new();
    h1.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was accepted: the
                    // listener is fine; give the others a moment to end.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let io = TokioIo::new(WriteTimeout::new(tcp, limits.write_timeout));
        if let Ok(permit) = serving.clone().try_acquire_owned() {
            let conn = h1.serve_connection(io, TowerToHyperService::new(app.clone()));
            let conn = graceful.watch(conn);
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!("connection: {e}");
                }
                drop(permit);
            });
        } else if let Ok(permit) = refusing.clone().try_acquire_owned() {
            let answer =
                hyper::service::service_fn(move |_| async move { Ok::<_, Infallible>(busy(max)) });
            let conn = h1.serve_connection(io, answer);
            tokio::spawn(async move {
                let _ = conn.await;
                drop(permit);
            });
        }
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
