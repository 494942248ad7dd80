//! `planwave serve`'s limits (issue 33): which `Host` names it answers, how many jobs run at
//! once, how big a plan may be, and how long and how many clients may hold it. Turned into
//! `planwave_serve::ServeLimits`; docs/guide/server-security.md lists them with defaults.
//! The connection guards ([`ConnArgs`]) are also `planwave worker --metrics-addr`'s.

use std::num::NonZeroUsize;
use std::time::Duration;

use clap::Args;
use planwave_serve::ServeLimits;

/// Who may hold an HTTP endpoint's connections, and for how long: `serve`'s and the
/// worker's metrics endpoint's.
#[derive(Debug, Args)]
pub struct ConnArgs {
    /// A host name this server may be reached by besides its address (and `localhost` on
    /// loopback), e.g. a reverse proxy's; repeatable. Other `Host` headers get 403.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Connections served at once; one more gets 503.
    #[arg(long, value_name = "N", default_value = "128")]
    pub max_connections: NonZeroUsize,
    /// Time a client has to send a request's headers; then its connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = planwave_config::parse_positive_duration)]
    pub header_timeout: Duration,
    /// Time an answer's write may wait for a client that reads nothing (an event stream
    /// nobody reads); then its connection is dropped and its place freed.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = planwave_config::parse_positive_duration)]
    pub write_timeout: Duration,
}

impl ConnArgs {
    /// `limits` with these guards.
    pub fn apply(&self, limits: ServeLimits) -> ServeLimits {
        ServeLimits {
            allowed_hosts: self.allowed_hosts.clone(),
            max_connections: self.max_connections.get(),
            header_timeout: self.header_timeout,
            write_timeout: self.write_timeout,
            ..limits
        }
    }
}

#[derive(Debug, Args)]
pub struct LimitArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Jobs running at once; more wait in a queue (status `queued`). Default: the number
    /// of CPU cores, at least 2.
    #[arg(long, value_name = "N")]
    pub max_running: Option<NonZeroUsize>,
    /// The most tasks one plan may have (a request's or a batch line's); more get 422.
    #[arg(long, value_name = "N", default_value = "1000")]
    pub max_tasks: NonZeroUsize,
    /// Time a client has to send a request's body; then it gets 408.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = planwave_config::parse_positive_duration)]
    pub body_timeout: Duration,
    /// How often an event stream with nothing new gets a keep-alive comment.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = planwave_config::parse_positive_duration)]
    pub sse_keep_alive: Duration,
}

impl LimitArgs {
    pub fn limits(&self) -> ServeLimits {
        let cores = std::thread::available_parallelism().map_or(2, NonZeroUsize::get);
        self.conn.apply(ServeLimits {
            max_running: self.max_running.map_or(cores.max(2), NonZeroUsize::get),
            max_tasks: self.max_tasks.get(),
            body_timeout: self.body_timeout,
            sse_keep_alive: self.sse_keep_alive,
            ..ServeLimits::default()
        })
    }
}
