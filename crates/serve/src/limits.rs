//! What one client or one request may cost the server (issue 33's "amplification" and "slow
//! clients"): how many jobs run at once (more wait, `queued`), how many tasks a plan may have,
//! how many connections are served at once, how long a client may take to send its headers
//! and its body, how often an idle event stream gets a keep-alive, and how long a write may
//! wait for a client that reads nothing. The front end sets them from flags;
//! [`ServeLimits::default`] is what `planwave serve` uses without flags.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

#[derive(Clone, Debug)]
pub struct ServeLimits {
    /// Host names a request's `Host` may give besides the bound address (and `localhost` on
    /// loopback): a name this machine is reached by, or a reverse proxy's. Lower case.
    pub allowed_hosts: Vec<String>,
    /// Jobs running at once; more wait their turn (status `queued`).
    pub max_running: usize,
    /// The most tasks one plan may have (a request's or a batch line's).
    pub max_tasks: usize,
    /// Connections served at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Time to send a request's headers (and, on a kept-alive connection, the next ones).
    pub header_timeout: Duration,
    /// Time to send a whole request body.
    pub body_timeout: Duration,
    /// How often an event stream with nothing new gets a comment line.
    pub sse_keep_alive: Duration,
    /// How long an answer's write may wait for a client that reads nothing (an event stream
    /// nobody reads); then the connection is dropped and its place freed.
    pub write_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            allowed_hosts: Vec::new(),
            max_running: 2,
            max_tasks: 1000,
            max_connections: 128,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            sse_keep_alive: Duration::from_secs(15),
            write_timeout: Duration::from_secs(30),
        }
    }
}

/// The limits request handlers apply (in [`crate::AppState`]).
pub struct Limits {
    /// One permit per running job, held from its start to its end.
    pub running: Arc<Semaphore>,
    pub max_tasks: usize,
    pub max_body: usize,
    pub body_timeout: Duration,
    pub sse_keep_alive: Duration,
}

impl Limits {
    pub fn new(l: &ServeLimits, max_body: usize) -> Limits {
        Limits {
            // A server that may run no job at all is of no use: at least one.
            running: Arc::new(Semaphore::new(l.max_running.max(1))),
            max_tasks: l.max_tasks,
            max_body,
            body_timeout: l.body_timeout,
            sse_keep_alive: l.sse_keep_alive,
        }
    }
}
