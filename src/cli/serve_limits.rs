//! `planwave serve`'s limits (issue 33): which `Host` names it answers, how many jobs run at
//! once, how big a plan may be, and how long and how many clients may hold it. Turned into
//! `planwave_serve::ServeLimits`; docs/guide/server-security.md lists them with defaults.

use std::num::NonZeroUsize;
use std::time::Duration;

use clap::Args;
use planwave_serve::ServeLimits;

#[derive(Debug, Args)]
pub struct LimitArgs {
    /// A host name this server may be reached by besides its address (and `localhost` on
    /// loopback), e.g. a reverse proxy's; repeatable. Other `Host` headers get 403.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Jobs running at once; more wait in a queue (status `queued`). Default: the number
    /// of CPU cores, at least 2.
    #[arg(long, value_name = "N")]
    pub max_running: Option<NonZeroUsize>,
    /// The most tasks one plan may have (a request's or a batch line's); more get 422.
    #[arg(long, value_name = "N", default_value = "1000")]
    pub max_tasks: NonZeroUsize,
    /// Connections served at once; one more gets 503.
    #[arg(long, value_name = "N", default_value = "128")]
    pub max_connections: NonZeroUsize,
    /// Time a client has to send a request's headers; then its connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = planwave_config::parse_positive_duration)]
    pub header_timeout: Duration,
    /// Time a client has to send a request's body; then it gets 408.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = planwave_config::parse_positive_duration)]
    pub body_timeout: Duration,
    /// How often an event stream with nothing new gets a keep-alive comment.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = planwave_config::parse_positive_duration)]
    pub sse_keep_alive: Duration,
    /// Time an answer's write may wait for a client that reads nothing (an event stream
    /// nobody reads); then its connection is dropped and its place freed.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = planwave_config::parse_positive_duration)]
    pub write_timeout: Duration,
}

impl LimitArgs {
    pub fn limits(&self) -> ServeLimits {
        let cores = std::thread::available_parallelism().map_or(2, NonZeroUsize::get);
        ServeLimits {
            allowed_hosts: self.allowed_hosts.clone(),
            max_running: self.max_running.map_or(cores.max(2), NonZeroUsize::get),
            max_tasks: self.max_tasks.get(),
            max_connections: self.max_connections.get(),
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            sse_keep_alive: self.sse_keep_alive,
            write_timeout: self.write_timeout,
        }
    }
}
