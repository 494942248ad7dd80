//! `planwave worker --metrics-addr`: the worker's `/metrics`, `/healthz` and `/readyz`
//! (crates/serve's `health`), with the queue's depth refreshed before each scrape and
//! readiness meaning the NATS server answers, the cache is writable and the MCP servers
//! started.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use planwave_queue::{JobPhase, OnCommit, OnJob, Queue};
use planwave_serve::health::{self, Health, McpUp, Probe, Writable};
use planwave_serve::metrics::Metrics;
use tokio_util::sync::CancellationToken;

/// `9464` (loopback) or `HOST:PORT`.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse()
        .map_err(|_| format!("{s:?}: a port, or HOST:PORT such as 127.0.0.1:9464"))
}

pub struct Probes<'a> {
    pub queue: &'a Queue,
    pub cache: &'a Path,
    pub mcp: Option<Arc<planwave_mcp::McpRegistry>>,
}

/// The NATS server answers a round trip.
struct Nats(Queue);

impl Probe for Nats {
    fn name(&self) -> &str {
        "nats"
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(self.0.reachable(Duration::from_secs(2)))
    }
}

pub async fn serve(
    addr: SocketAddr,
    limits: &planwave_serve::ServeLimits,
    metrics: &Arc<Metrics>,
    probes: Probes<'_>,
    stop: CancellationToken,
) -> anyhow::Result<SocketAddr> {
    let queue = probes.queue.clone();
    let depth_of = metrics.clone();
    let before_scrape: health::BeforeScrape = Arc::new(move || {
        let (queue, metrics) = (queue.clone(), depth_of.clone());
        Box::pin(async move {
            if let Ok(d) = queue.depth().await {
                metrics.queue_depth(d.pending, d.in_progress, d.redelivered);
            }
        })
    });
    let h = Arc::new(Health {
        metrics: metrics.clone(),
        probes: vec![
            Arc::new(Nats(probes.queue.clone())),
            Arc::new(Writable(probes.cache.to_path_buf())),
            Arc::new(McpUp(probes.mcp)),
        ],
        before_scrape: Some(before_scrape),
    });
    health::serve_health(addr, h, limits, stop)
        .await
        .map_err(|e| anyhow::anyhow!("--metrics-addr {addr}: {e}"))
}

pub fn on_commit(metrics: &Arc<Metrics>) -> OnCommit {
    let metrics = metrics.clone();
    Arc::new(move |took| metrics.journal_commit(took))
}

pub fn on_job(metrics: &Arc<Metrics>) -> OnJob {
    let metrics = metrics.clone();
    Arc::new(move |phase| match phase {
        JobPhase::Started => metrics.job_started(),
        JobPhase::Ended(state) => metrics.job_finished(state),
    })
}
